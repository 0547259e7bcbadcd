package apply

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plimsoll.dev/plimsoll/sync/inventory"
)

// selfSubjectAccessReviews is the resource a client asks what it may do
// with.
var selfSubjectAccessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// PruneRefusal is an object that left Git whose delete the sync's
// identity may not make.
type PruneRefusal struct {
	// Entry is the object.
	Entry inventory.Entry
	// Resource is its resource as RBAC spells it ("configmaps",
	// "deployments.apps").
	Resource string
}

// Error reads `prune ConfigMap team-a/old: the sync's identity may not
// delete configmaps in namespace team-a`.
func (e *PruneRefusal) Error() string {
	where := ""
	if e.Entry.Namespace != "" {
		where = " in namespace " + e.Entry.Namespace
	}
	return fmt.Sprintf("prune %s: the sync's identity may not delete %s%s", e.Entry.Key(), e.Resource, where)
}

// CheckPrunes refuses, before anything of a commit is applied, the
// objects that left Git and that the sync's identity may not delete:
// applied, such a commit would fail at its prune with everything else in
// place. It asks the API server with a SelfSubjectAccessReview made as
// the identity, once per resource and namespace. An Applier that writes
// with the reads' rights (no Config.Reads: the daemon's own sync) asks
// nothing, nor does one with nothing to prune.
func (a *Applier) CheckPrunes(ctx context.Context, entries []inventory.Entry) error {
	if a.cfg.Reads == nil || len(entries) == 0 {
		return nil
	}
	type scope struct{ group, resource, namespace string }
	allowed := map[scope]bool{}
	var errs []error
	for _, e := range entries {
		gv, err := schema.ParseGroupVersion(e.APIVersion)
		if err != nil {
			continue // the prune says so
		}
		mapping, err := a.cfg.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: e.Kind}, gv.Version)
		if meta.IsNoMatchError(err) {
			continue // a kind no longer served has nothing to delete
		}
		if err != nil {
			return fmt.Errorf("map %s: %w", e.Key(), err)
		}
		s := scope{mapping.Resource.Group, mapping.Resource.Resource, e.Namespace}
		ok, asked := allowed[s]
		if !asked {
			if ok, err = a.mayDelete(ctx, s.group, s.resource, s.namespace); err != nil {
				return err
			}
			allowed[s] = ok
		}
		if !ok {
			name := s.resource
			if s.group != "" {
				name += "." + s.group
			}
			errs = append(errs, &PruneRefusal{Entry: e, Resource: name})
		}
	}
	return errors.Join(errs...)
}

// mayDelete asks the API server whether the writes' identity may delete
// resource of group in namespace.
func (a *Applier) mayDelete(ctx context.Context, group, resource, namespace string) (bool, error) {
	review := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authorization.k8s.io/v1",
		"kind":       "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]any{
			"verb": "delete", "group": group, "resource": resource, "namespace": namespace,
		}},
	}}
	out, err := a.cfg.Dynamic.Resource(selfSubjectAccessReviews).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("ask whether the sync's identity may delete %s: %w", resource, err)
	}
	ok, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
	return ok, nil
}
