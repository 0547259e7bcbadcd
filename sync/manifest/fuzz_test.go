package manifest

import (
	"errors"
	"testing"
	"testing/fstest"
)

// fuzzNames are the names the fuzzed file may have: plain YAML, JSON, or a
// kustomization.
var fuzzNames = [...]string{"f.yaml", "f.json", "kustomization.yaml"}

// fuzzMaxSize is the size above which the fuzzed tree's file system refuses
// the file, as the repository's does for oversized files.
const fuzzMaxSize = 8 << 10

func FuzzRender(f *testing.F) {
	seeds := []string{
		"",
		"---\n",
		configMap("a") + "---\n" + configMap("b"),
		"apiVersion: v1\nkind: List\nitems:\n- " + "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}`,
		billionLaughs(4),
		"a: &a [*a]\n",
		"a: &x {b: 1}\nc:\n  <<: [*x, {d: 2}]\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: !!binary aGk=}\n",
		"resources:\n- f.yaml\nnamePrefix: p-\n",
		"resources:\n- https://example.com/x.yaml\n",
		"configMapGenerator:\n- name: c\n  literals: [a=b]\n",
		"x: 1e400\ny: -.inf\nz: 0x_1\n",
		"? [a]\n: b\n",
		"%YAML 1.1\n---\na: !!timestamp 2001-12-14\n",
	}
	for _, s := range seeds {
		for i := range fuzzNames {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		name := fuzzNames[int(which)%len(fuzzNames)]
		fsys := refusingFS{
			base:   fstest.MapFS{name: &fstest.MapFile{Data: data, Mode: 0o644}},
			refuse: map[string]bool{name: len(data) > fuzzMaxSize},
		}
		objs, err := Render(fsys, ".", Limits{})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !errors.Is(err, errTooLarge) {
				t.Fatalf("error %T is neither an *Error nor the file system's: %v", err, err)
			}
			if objs != nil {
				t.Fatalf("objects returned with an error")
			}
			return
		}
		for _, o := range objs {
			if o.Obj == nil || o.Origin.File != name || o.Origin.Doc < 1 {
				t.Fatalf("bad object %+v", o)
			}
			// DeepCopy panics on values that are not JSON-compatible.
			_ = o.Obj.DeepCopy()
		}
		// Validate must take whatever Render gives.
		_ = Validate(objs, clusterScope, "default")
	})
}
