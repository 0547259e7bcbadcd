package sync

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/declare"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Declarations is where the daemon takes declared syncs from; a sync
// whose commit declares syncs has its declarations checked against it
// before anything of the commit is applied.
//
// Namespace is the one namespace declarations are taken from. Check
// reports, as a *declare.FieldError, what the cluster says against a
// declaration that parsed: a credentials Secret that does not exist, a
// ServiceAccount that does not exist or that the daemon may not act as.
// inCommit reports whether the commit itself applies an object (a kind
// of the core group), which then counts as existing.
type Declarations interface {
	Namespace() string
	Check(ctx context.Context, spec *declare.Spec, inCommit func(kind, namespace, name string) bool) error
}

// checkDeclarations refuses a commit whose sync declarations are wrong,
// before anything of it is applied: a declaration on a daemon that takes
// none, or in a namespace it does not take them from; one that does not
// parse; one of this sync itself; one that the cluster refuses (see
// Declarations.Check). Each refusal names the file, the document, the
// declaration and the field.
func (s *Syncer) checkDeclarations(ctx context.Context, objs []manifest.Object) error {
	var errs []error
	keys := map[manifest.Key]bool{}
	for _, obj := range objs {
		keys[obj.Key()] = true
	}
	inCommit := func(kind, namespace, name string) bool {
		return keys[manifest.Key{Kind: kind, Namespace: namespace, Name: name}]
	}
	for _, obj := range objs {
		if !isKind(obj, "", "ConfigMap") || !declare.IsDeclaration(obj.Obj.GetLabels()) {
			continue
		}
		if err := s.checkDeclaration(ctx, obj, inCommit); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkDeclaration checks the one declaration obj.
func (s *Syncer) checkDeclaration(ctx context.Context, obj manifest.Object, inCommit func(kind, namespace, name string) bool) error {
	name, ns := obj.Obj.GetName(), obj.Obj.GetNamespace()
	refuse := func(field, format string, args ...any) error {
		e := &manifest.Error{Origin: obj.Origin, Reason: fmt.Sprintf("declared sync %s: ", name) + fmt.Sprintf(format, args...)}
		if field != "" {
			e.Field = fmt.Sprintf("data[%q].%s", contract.SyncDeclarationKey, field)
		}
		return e
	}
	switch {
	case s.cfg.Declarations == nil:
		return refuse("", "this daemon takes no sync declarations (it runs without --syncs-namespace)")
	case ns != s.cfg.Declarations.Namespace():
		return refuse("", "declared in namespace %s, but this daemon takes declarations only from namespace %s", ns, s.cfg.Declarations.Namespace())
	case name == s.cfg.Name:
		return refuse("", "a sync cannot declare itself (%s is this sync's name)", name)
	}
	cm := &corev1.ConfigMap{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Obj.Object, cm); err != nil {
		return refuse("", "read the ConfigMap: %v", err)
	}
	spec, err := declare.Parse(cm)
	if err == nil {
		err = s.cfg.Declarations.Check(ctx, spec, inCommit)
	}
	var fe *declare.FieldError
	if errors.As(err, &fe) {
		if fe.Field == "" {
			return refuse("", "%s", fe.Reason)
		}
		return refuse(fe.Field, "%s", fe.Reason)
	}
	if err != nil {
		return refuse("", "%v", err)
	}
	return nil
}

// isKind reports whether obj is of group and kind.
func isKind(obj manifest.Object, group, kind string) bool {
	gvk := obj.Obj.GroupVersionKind()
	return gvk.Group == group && gvk.Kind == kind
}

// Refuse records that the sync cannot run as declared (the identity it
// names may not be used, say): its status Failed with err, and a Warning
// Event. Nothing is applied or pruned; what it applied before keeps
// running.
func (s *Syncer) Refuse(ctx context.Context, err error) error {
	rec, lerr := s.cfg.Store.Load(ctx)
	if lerr != nil {
		return lerr
	}
	st := rec.Status
	st.State = contract.SyncFailed
	st.Message = fmt.Sprintf("declaration refused (still running %s): %s", shortOrNone(st.Commit), oneLine(err))
	s.report(ctx, st, err)
	rec.Status = st
	_, serr := s.cfg.Store.Save(ctx, rec)
	return serr
}
