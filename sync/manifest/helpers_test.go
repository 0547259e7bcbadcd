package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// tree builds a repository from file contents by path.
func tree(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: []byte(data), Mode: 0o644}
	}
	return m
}

// errTooLarge stands for the repository's file system refusing a file.
var errTooLarge = errors.New("file exceeds the size limit")

// refusingFS is a repository whose file system refuses some files, as the
// real one refuses symlinks and oversized files. It has only Open, so that
// every read goes through it.
type refusingFS struct {
	base   fstest.MapFS
	refuse map[string]bool
}

func (r refusingFS) Open(name string) (fs.File, error) {
	if r.refuse[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errTooLarge}
	}
	return r.base.Open(name)
}

// describe lists objects as "origin: key".
func describe(objs []Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s: %s", o.Origin, o.Key()))
	}
	return out
}

// fakeScope serves the kinds it lists, namespaced or not.
type fakeScope map[schema.GroupVersionKind]bool

func (f fakeScope) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	namespaced, ok := f[gvk]
	if !ok {
		return false, fmt.Errorf("look up %s: %w", gvk, ErrUnknownKind)
	}
	return namespaced, nil
}

// clusterScope is a small cluster's discovery.
var clusterScope = fakeScope{
	{Version: "v1", Kind: "ConfigMap"}:                                               true,
	{Version: "v1", Kind: "Secret"}:                                                  true,
	{Version: "v1", Kind: "Service"}:                                                 true,
	{Version: "v1", Kind: "ServiceAccount"}:                                          true,
	{Version: "v1", Kind: "Namespace"}:                                               false,
	{Group: "apps", Version: "v1", Kind: "Deployment"}:                               true,
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:         false,
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}: false,
}

// billionLaughs returns a YAML document whose aliases expand nine-fold at
// each of levels levels.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n")
	b.WriteString("  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// configMap returns a ConfigMap manifest.
func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
}

// wantError checks that err is exactly want, or nil when want is empty.
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Fatalf("error:\n got %q\nwant %q", err.Error(), want)
	}
}

// wantList checks got against want, entry by entry.
func wantList(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
