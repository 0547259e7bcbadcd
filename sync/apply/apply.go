package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Waits of the applier.
const (
	// establishTimeout bounds the wait for applied CRDs to be served.
	establishTimeout = 60 * time.Second
	// recreateTimeout bounds the wait for a forced object to be gone
	// before it is created again.
	recreateTimeout = 60 * time.Second
	pollInterval    = 250 * time.Millisecond
)

// Change is what happened to one object.
type Change struct {
	Key manifest.Key
	// Action is ActionCreate, ActionUpdate, ActionRestore, ActionNone (the
	// server found nothing to change) or ActionDelete.
	Action Action
	// Item is the applied item (nil for deletions).
	Item *Item
}

// Result is what Apply did.
type Result struct {
	// Changes holds one entry per written object, in write order.
	Changes []Change
	// Applied holds every item that is now as desired in the cluster: the
	// written ones and those that needed no write. Items skipped by the
	// caller's filter are not in it.
	Applied []*Item
}

// Apply writes the plan. First the sync takes over the fields kubectl set
// on the live objects (see takeOver), and every write that can be checked
// now is dry-run on the server; if any dry-run fails, nothing but managed
// fields is written and the joined errors name each object's file and
// document. Then Namespaces and CRDs are
// applied and the CRDs awaited, the objects that depended on them (custom
// resources of a new CRD, objects in a new namespace) are dry-run in turn,
// and the rest is applied. In each of the two stages the objects new to
// the sync are claimed first, one at a time in key order, and an object
// another sync claimed meanwhile stops the apply with an *OwnerError
// before the sync's own objects are written (see claim).
//
// Items for which skip returns true are dry-run but not applied: the
// caller hands them elsewhere (the rollout controller takes the
// Deployments), and they are checked as Git writes them, whoever wrote the
// live object (see dryRunHanded).
func (a *Applier) Apply(ctx context.Context, plan *Plan, skip func(*Item) bool) (Result, error) {
	var res Result
	newNamespaces := map[string]bool{}
	for _, it := range plan.Items {
		if isNamespace(it) && it.Action == ActionCreate {
			newNamespaces[it.Object.Obj.GetName()] = true
		}
	}
	var now, later []*Item
	for _, it := range plan.Writes() {
		if it.Mapping == nil || newNamespaces[it.Object.Obj.GetNamespace()] {
			later = append(later, it)
		} else {
			now = append(now, it)
		}
	}
	if err := a.takeOver(ctx, now, skip); err != nil {
		return res, err
	}
	if err := a.dryRun(ctx, now, skip); err != nil {
		return res, err
	}

	var first, second []*Item
	for _, it := range now {
		if isNamespace(it) || isCRD(it) {
			first = append(first, it)
		} else {
			second = append(second, it)
		}
	}
	changes, err := a.write(ctx, first)
	res.Changes = append(res.Changes, changes...)
	if err != nil {
		return res, err
	}
	if err := a.awaitCRDs(ctx, first); err != nil {
		return res, err
	}
	if len(later) > 0 {
		if err := a.remap(later); err != nil {
			return res, err
		}
		if err := a.dryRun(ctx, later, skip); err != nil {
			return res, err
		}
		second = append(second, later...)
	}

	var toWrite []*Item
	for _, it := range second {
		if skip == nil || !skip(it) {
			toWrite = append(toWrite, it)
		}
	}
	changes, err = a.write(ctx, toWrite)
	res.Changes = append(res.Changes, changes...)
	written := map[*Item]bool{}
	for _, c := range res.Changes {
		written[c.Item] = true
	}
	for _, it := range plan.Items {
		if (it.Action == ActionNone || written[it]) && (skip == nil || !skip(it)) {
			res.Applied = append(res.Applied, it)
		}
	}
	return res, err
}

// dryRun applies every item with dryRun=All, concurrently, and joins the
// failures; those handed elsewhere (skip) are dry-run as dryRunHanded
// does. A forced item whose change touches an immutable field is marked
// for recreation instead of failing, unless it is handed elsewhere (see
// handedRejection) or a StatefulSet whose selector changed (see
// statefulSetRejection).
func (a *Applier) dryRun(ctx context.Context, items []*Item, skip func(*Item) bool) error {
	return a.forEach(ctx, items, func(ctx context.Context, it *Item) error {
		handed := skip != nil && skip(it)
		var err error
		if handed {
			err = a.dryRunHanded(ctx, it)
		} else {
			_, err = a.patch(ctx, it, a.cfg.FieldManager, true)
		}
		switch {
		case err == nil:
			return nil
		case handed:
			return handedRejection(it, err)
		}
		forced := it.Object.Obj.GetAnnotations()[contract.AnnotationForce] == "true"
		if isStatefulSet(it) && isStatefulSetFixed(err) {
			if !forced || !a.forcedStatefulSet(ctx, it) {
				return a.statefulSetRejection(ctx, it, err)
			}
		} else if !forced || !isImmutable(err) {
			return Rejection(it, "dry-run", err)
		}
		it.Action = ActionCreate
		it.recreate = true
		return nil
	})
}

// write writes a stage of items: first it claims those new to the sync,
// one at a time (see claim), and stops if another sync owns one; then it
// applies the others, the sync's own objects, concurrently.
func (a *Applier) write(ctx context.Context, items []*Item) ([]Change, error) {
	var claims, own []*Item
	for _, it := range items {
		if it.Live == nil {
			claims = append(claims, it)
		} else {
			own = append(own, it)
		}
	}
	changes, err := a.claim(ctx, claims)
	if err != nil {
		return changes, err
	}
	applied, err := a.applyAll(ctx, own)
	return append(changes, applied...), err
}

// applyAll applies items concurrently and returns what changed, in item
// order.
func (a *Applier) applyAll(ctx context.Context, items []*Item) ([]Change, error) {
	changes := make([]Change, len(items))
	index := make(map[*Item]int, len(items))
	for i, it := range items {
		index[it] = i
	}
	err := a.forEach(ctx, items, func(ctx context.Context, it *Item) error {
		if it.recreate {
			if err := a.deleteAndWait(ctx, it); err != nil {
				return err
			}
			it.Live = nil
		}
		applied, err := a.patch(ctx, it, a.cfg.FieldManager, false)
		if err != nil {
			return Rejection(it, "apply", err)
		}
		action := it.Action
		if it.Live != nil && (applied.GetResourceVersion() == it.Live.GetResourceVersion() ||
			it.liveState != "" && stateDigest(applied.Object) == it.liveState) {
			action = ActionNone
		}
		changes[index[it]] = Change{Key: it.Key(), Action: action, Item: it}
		return nil
	})
	out := changes[:0]
	for _, c := range changes {
		if c.Item != nil {
			out = append(out, c)
		}
	}
	return out, err
}

// patch applies it as manager, only as a dry run when dryRun is set.
func (a *Applier) patch(ctx context.Context, it *Item, manager string, dryRun bool) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return a.resource(it).Apply(ctx, it.Object.Obj.GetName(), it.Object.Obj, opts)
}

// dryRunHanded checks an item that another writer applies (the rollout
// controller, for a Deployment) as Git writes it: a dry-run update that
// replaces the live object whole, so that a field Git no longer sets is
// gone whichever field manager set it, and an immutable field is checked
// against the live object; a dry-run create when there is none. A
// server-side apply as the sync would keep a field the other writer set
// and Git dropped: a Deployment whose commit drops minReadySeconds: 60
// and sets progressDeadlineSeconds: 10 kept the 60 and was refused.
//
// One request each: the create for an item the plan found no live object
// of (a blue-green workload's, which runs under its colors' names), the
// update for the others; the other one after a create that finds the
// object there (one the sync has not labelled yet) or an update that
// finds it gone.
func (a *Applier) dryRunHanded(ctx context.Context, it *Item) error {
	obj := it.Object.Obj.DeepCopy()
	obj.SetResourceVersion("") // an unconditional update: what a write of Git's object would meet
	dryRun := []string{metav1.DryRunAll}
	update := func() error {
		_, err := a.resource(it).Update(ctx, obj, metav1.UpdateOptions{DryRun: dryRun, FieldManager: a.cfg.FieldManager})
		return err
	}
	create := func() error {
		_, err := a.resource(it).Create(ctx, obj, metav1.CreateOptions{DryRun: dryRun, FieldManager: a.cfg.FieldManager})
		return err
	}
	if it.Live == nil {
		if err := create(); !apierrors.IsAlreadyExists(err) {
			return err
		}
		return update()
	}
	if err := update(); !apierrors.IsNotFound(err) {
		return err
	}
	return create()
}

func (a *Applier) resource(it *Item) dynamic.ResourceInterface {
	r := a.cfg.Dynamic.Resource(it.Mapping.Resource)
	if it.Mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Namespace(it.Object.Obj.GetNamespace())
	}
	return r
}

// deleteAndWait deletes a forced object and waits until it is gone, so that
// it can be created again with its new immutable fields. A StatefulSet
// goes without its pods (orphaned), which the new one adopts: they keep
// running, and keep their volumes.
func (a *Applier) deleteAndWait(ctx context.Context, it *Item) error {
	client := a.resource(it)
	name := it.Object.Obj.GetName()
	policy := metav1.DeletePropagationBackground
	if isStatefulSet(it) {
		policy = metav1.DeletePropagationOrphan
	}
	err := client.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s to recreate it (%s): %w", it.Key(), it.Object.Origin, err)
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, recreateTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be deleted before recreating it: %w", it.Key(), err)
	}
	return nil
}

// awaitCRDs waits until every applied CRD is Established, then forgets the
// cached discovery so that their kinds map.
func (a *Applier) awaitCRDs(ctx context.Context, items []*Item) error {
	var crds []*Item
	for _, it := range items {
		if isCRD(it) {
			crds = append(crds, it)
		}
	}
	if len(crds) == 0 {
		return nil
	}
	for _, it := range crds {
		name := it.Object.Obj.GetName()
		err := wait.PollUntilContextTimeout(ctx, pollInterval, establishTimeout, true, func(ctx context.Context) (bool, error) {
			crd, err := a.resource(it).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return conditionTrue(crd, "Established"), nil
		})
		if err != nil {
			return fmt.Errorf("wait for CustomResourceDefinition %s to be established (%s): %w", name, it.Object.Origin, err)
		}
	}
	a.cfg.Mapper.Reset()
	return nil
}

// remap maps the items whose kinds were not served at plan time.
func (a *Applier) remap(items []*Item) error {
	for _, it := range items {
		if it.Mapping != nil {
			continue
		}
		gvk := it.Object.Obj.GroupVersionKind()
		mapping, err := a.cfg.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return &manifest.Error{Origin: it.Object.Origin, Field: "kind",
				Reason: fmt.Sprintf("%s is not served even after its CustomResourceDefinition was applied: %v", gvk.Kind, err)}
		}
		it.Mapping = mapping
	}
	return nil
}

// forEach runs fn on every item with at most Workers at once and joins the
// errors in item order, so the same failures always read the same (and an
// unchanged status is not rewritten). It does not stop at the first
// failure: a user fixing a commit wants every problem at once.
func (a *Applier) forEach(ctx context.Context, items []*Item, fn func(context.Context, *Item) error) error {
	errs := make([]error, len(items))
	var g errgroup.Group
	g.SetLimit(a.cfg.Workers)
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			break
		}
		g.Go(func() error {
			errs[i] = fn(ctx, it)
			return nil
		})
	}
	_ = g.Wait() // every failure is in errs
	return errors.Join(errs...)
}

// Rejection turns an API error about an item into a bad-input error that
// names the file, the document and, where the API server gives one, the
// field.
func Rejection(it *Item, action string, err error) error {
	field := ""
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil && len(d.Causes) > 0 {
			field = d.Causes[0].Field
		}
	}
	reason := fmt.Sprintf("%s %s: %v", action, it.Key(), err)
	if isImmutable(err) {
		reason += fmt.Sprintf(" (set annotation %s: \"true\" on it to delete and recreate it)", contract.AnnotationForce)
	}
	return &manifest.Error{Origin: it.Object.Origin, Field: field, Reason: reason}
}

// handedRejection is Rejection for an item handed elsewhere: a workload's
// Deployment, which the rollout controller writes. An immutable field of
// it (its selector) is refused with or without plimsoll.dev/force: the
// sync does not write it, and deleting it to create it again would take
// its pods, and the Service's endpoints, down at once. The way to change
// it is a new Deployment beside it, the old one removed once the new
// serves.
func handedRejection(it *Item, err error) error {
	rejected := Rejection(it, "dry-run", err)
	if !isImmutable(err) {
		return rejected
	}
	var bad *manifest.Error
	if errors.As(rejected, &bad) {
		bad.Reason = fmt.Sprintf("dry-run %s: %v (%s)", it.Key(), err, contract.RecreateAdvice)
	}
	return rejected
}

func isImmutable(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "immutable")
}

func isNamespaceGone(err error) bool {
	return apierrors.IsNotFound(err)
}

func isNamespace(it *Item) bool {
	gvk := it.Object.Obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Namespace"
}

func isCRD(it *Item) bool {
	gvk := it.Object.Obj.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

func conditionTrue(obj *unstructured.Unstructured, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condition {
			return m["status"] == "True"
		}
	}
	return false
}
