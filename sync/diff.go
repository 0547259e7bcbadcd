package sync

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/sync/apply"
)

// Diff returns what a sync of the branch head would change, one unified
// diff per object, without changing anything: the objects are dry-run
// with server-side apply; the Deployments the rollout controller runs
// under other names are compared with the Deployment that serves them; the
// objects a prune would delete diff to nothing. commit is the head.
func (s *Syncer) Diff(ctx context.Context) (commit string, diffs []apply.ObjectDiff, err error) {
	rec, err := s.cfg.Store.Load(ctx)
	if err != nil {
		return "", nil, err
	}
	head, err := s.cfg.Source.Head(ctx)
	if err == nil {
		err = s.cfg.Source.Fetch(ctx, head)
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the source: %w", err)
	}
	snap, err := s.cfg.Source.Snapshot(ctx, head)
	if err != nil {
		return "", nil, fmt.Errorf("read commit %s: %w", short(head), err)
	}
	objs, err := s.render(snap, len(rec.Inventory))
	if err != nil {
		return "", nil, err
	}
	plan, err := s.cfg.Applier.Plan(ctx, objs, s.writable(rec.Inventory))
	if err != nil {
		return "", nil, err
	}
	if !s.cfg.Prune {
		plan.Prune = nil
	}
	// Deployments served under other names are compared by their fields;
	// the rest goes through the dry-run.
	rest := plan.Items[:0:0]
	for _, it := range plan.Items {
		d, err := s.servingDiff(ctx, it)
		switch {
		case err != nil:
			return "", nil, err
		case d == nil:
			rest = append(rest, it)
		case d.Diff != "":
			diffs = append(diffs, *d)
		}
	}
	plan.Items = rest
	dry, err := s.cfg.Applier.Diff(ctx, plan)
	if err != nil {
		return "", nil, err
	}
	return head, append(diffs, dry...), nil
}

// servingDiff compares a Git Deployment that the rollout controller runs
// under other names with the Deployment that serves it; nil for any other
// object.
func (s *Syncer) servingDiff(ctx context.Context, it *apply.Item) (*apply.ObjectDiff, error) {
	if s.cfg.Deployments == nil || !isDeployment(it) {
		return nil, nil
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object.Obj.Object, d); err != nil {
		return nil, fmt.Errorf("read Deployment %s: %w", it.Key(), err)
	}
	serving, err := s.cfg.Deployments.ServingDeployment(ctx, d)
	if err != nil || serving == nil {
		return nil, err
	}
	live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(serving)
	if err != nil {
		return nil, fmt.Errorf("read Deployment %s: %w", serving.Name, err)
	}
	live["apiVersion"], live["kind"] = it.Object.Obj.GetAPIVersion(), it.Object.Obj.GetKind()
	diff, err := apply.DiffFields(it.Key(), &unstructured.Unstructured{Object: live}, it.Object.Obj)
	if err != nil {
		return nil, err
	}
	return &apply.ObjectDiff{Key: it.Key(), Diff: diff}, nil
}
