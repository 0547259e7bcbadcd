package helm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// hookPoll is how often a running hook is looked at.
const hookPoll = 500 * time.Millisecond

// Hooks runs the hooks of chart releases: it applies each hook object,
// waits for a Job to complete or a Pod to succeed, and deletes hooks as
// their delete policies say.
type Hooks struct {
	// Dynamic writes and reads the hook objects.
	Dynamic dynamic.Interface
	// Mapper maps a hook's kind to its resource.
	Mapper meta.RESTMapper
	// FieldManager applies the hooks.
	FieldManager string
	// Log receives each hook run.
	Log *slog.Logger
}

// Run runs the hooks of out for event, lowest weight first (then by
// Helm's install order of kinds, then by name, as Helm orders them), one
// at a time, each within the release's hook timeout. A hook that fails
// stops the run: the error names the release, the event and the hook.
func (h *Hooks) Run(ctx context.Context, out *manifest.ChartOutput, event string) error {
	var hooks []manifest.Hook
	for _, hk := range out.Hooks {
		if slices.Contains(hk.Events, event) {
			hooks = append(hooks, hk)
		}
	}
	slices.SortStableFunc(hooks, func(a, b manifest.Hook) int {
		if a.Weight != b.Weight {
			return a.Weight - b.Weight
		}
		if c := kindRank(a.Obj.GetKind()) - kindRank(b.Obj.GetKind()); c != 0 {
			return c
		}
		return strings.Compare(a.Obj.GetName(), b.Obj.GetName())
	})
	for _, hk := range hooks {
		if err := h.runOne(ctx, out, hk, event); err != nil {
			return fmt.Errorf("chart %s: %s hook %s %s: %w", out.Release, event, hk.Obj.GetKind(), hookName(hk), err)
		}
	}
	// As Helm does, hooks are deleted on success once every hook of the
	// event succeeded: a ServiceAccount hook serves the Job hooks after it.
	for _, hk := range hooks {
		if !slices.Contains(hk.DeletePolicies, DeleteSucceeded) {
			continue
		}
		res, obj, err := h.resource(hk)
		if err == nil {
			err = deleteAndWait(ctx, res, obj.GetName(), out.HookTimeout)
		}
		if err != nil {
			return fmt.Errorf("chart %s: %s hook %s %s: delete after the run: %w", out.Release, event, hk.Obj.GetKind(), hookName(hk), err)
		}
	}
	return nil
}

// kindRank is the place of a kind in Helm's install order; kinds it does
// not list come last.
func kindRank(kind string) int {
	if i := slices.Index(releaseutil.InstallOrder, kind); i >= 0 {
		return i
	}
	return len(releaseutil.InstallOrder)
}

// resource returns the client of a hook's resource and the hook object
// with its namespace set.
func (h *Hooks) resource(hk manifest.Hook) (dynamic.ResourceInterface, *unstructured.Unstructured, error) {
	gvk := hk.Obj.GroupVersionKind()
	mapping, err := h.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("map the kind: %w", err)
	}
	obj := hk.Obj.DeepCopy()
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return h.Dynamic.Resource(mapping.Resource), obj, nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(hk.DefaultNamespace)
	}
	return h.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), obj, nil
}

// hookName is "namespace/name" of a hook, or its name when cluster-scoped.
func hookName(hk manifest.Hook) string {
	ns := hk.Obj.GetNamespace()
	if ns == "" {
		ns = hk.DefaultNamespace
	}
	if ns != "" {
		return ns + "/" + hk.Obj.GetName()
	}
	return hk.Obj.GetName()
}

// runOne runs one hook: deletes its previous run (before-hook-creation),
// applies it, waits for it, and deletes it if it failed (hook-failed).
func (h *Hooks) runOne(ctx context.Context, out *manifest.ChartOutput, hk manifest.Hook, event string) error {
	res, obj, err := h.resource(hk)
	if err != nil {
		return err
	}
	if slices.Contains(hk.DeletePolicies, DeleteBeforeCreation) {
		if err := deleteAndWait(ctx, res, obj.GetName(), out.HookTimeout); err != nil {
			return fmt.Errorf("delete the previous run: %w", err)
		}
	}
	h.Log.Info("running hook", "release", out.Release.Name, "event", event, "kind", obj.GetKind(), "name", obj.GetName(), "weight", hk.Weight)
	if _, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: h.FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	runErr := waitHook(ctx, res, obj, out.HookTimeout)
	if runErr != nil && slices.Contains(hk.DeletePolicies, DeleteFailed) {
		if err := deleteAndWait(ctx, res, obj.GetName(), out.HookTimeout); err != nil {
			return errors.Join(runErr, fmt.Errorf("delete after the run: %w", err))
		}
	}
	return runErr
}

// waitHook waits for a Job to complete or a Pod to succeed; any other
// kind is done once applied.
func waitHook(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured, timeout time.Duration) error {
	kind := obj.GetKind()
	if obj.GetAPIVersion() == "batch/v1" && kind == "Job" || obj.GetAPIVersion() == "v1" && kind == "Pod" {
		var verdict error
		err := wait.PollUntilContextTimeout(ctx, hookPoll, timeout, true, func(ctx context.Context) (bool, error) {
			live, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				// Gone once finished: a Job with ttlSecondsAfterFinished: 0
				// (ingress-nginx's) is deleted as soon as it completes.
				return true, nil
			}
			if err != nil {
				return false, err
			}
			done, failed := hookDone(live)
			if failed != "" {
				verdict = errors.New(failed)
			}
			return done, nil
		})
		if err != nil {
			return fmt.Errorf("did not finish within %s: %w", timeout, err)
		}
		return verdict
	}
	return nil
}

// hookDone reads whether a Job or Pod finished, and why it failed.
func hookDone(live *unstructured.Unstructured) (done bool, failed string) {
	if live.GetKind() == "Pod" {
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return true, ""
		case "Failed":
			return true, "the Pod failed"
		}
		return false, ""
	}
	conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		switch m["type"] {
		case "Complete":
			return true, ""
		case "Failed":
			msg, _ := m["message"].(string)
			reason, _ := m["reason"].(string)
			return true, strings.TrimSpace("the Job failed: " + reason + " " + msg)
		}
	}
	return false, ""
}

// deleteAndWait deletes an object, its dependents in the foreground, and
// waits for it to be gone.
func deleteAndWait(ctx context.Context, res dynamic.ResourceInterface, name string, timeout time.Duration) error {
	fg := metav1.DeletePropagationForeground
	err := res.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, hookPoll, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := res.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
