package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/internal/fields"
)

// Holds reports whether a live template still holds every field
// of git, a template from Git, with Git's value, both compared as
// Normalize gives them. It tells a template changed by hand since
// it was written from git, which keeps the stamp it was written with (see
// Stamp), so that LiveHash still reads git's hash from it:
//
//   - `kubectl set image` or an edited env value changes a field Git sets:
//     false;
//   - `kubectl set env` adds an env var: a list of another length, false;
//   - a field Git leaves out, which a mutating admission webhook or a
//     newer API server's default filled in, or a label or annotation
//     another tool added: true, as server-side apply leaves such fields to
//     their owners.
//
// A key added to a map Git sets (a resource limit beside Git's requests,
// a template label) is not seen here either: it may as well be another
// tool's.
func Holds(live, git corev1.PodTemplateSpec) bool {
	l, n := Normalize(live), Normalize(git)
	got, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(&l)
	want, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(&n)
	return err1 == nil && err2 == nil && fields.Hold(got, want)
}
