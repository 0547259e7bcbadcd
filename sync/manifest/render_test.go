package manifest

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		dir   string
		want  []string
	}{
		{
			name:  "plain YAML",
			files: map[string]string{"web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n"},
			want:  []string{"web.yaml, document 1: apps/Deployment shop/web"},
		},
		{
			name: "multiple documents, empty ones skipped",
			files: map[string]string{"all.yml": "---\n" + configMap("a") + "---\n---\n# only a comment\n---\n" +
				configMap("b") + "---\nnull\n---\n" + configMap("c") + "...\n"},
			want: []string{
				"all.yml, document 1: ConfigMap a",
				"all.yml, document 4: ConfigMap b",
				"all.yml, document 6: ConfigMap c",
			},
		},
		{
			name:  "JSON object",
			files: map[string]string{"cm.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j", "namespace": "x"}, "data": {"n": "1"}}`},
			want:  []string{"cm.json, document 1: ConfigMap x/j"},
		},
		{
			name: "JSON List",
			files: map[string]string{"list.json": `{"apiVersion": "v1", "kind": "List", "items": [
				{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}},
				{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "two"}}]}`},
			want: []string{"list.json, document 1, item 1: ConfigMap one", "list.json, document 1, item 2: Secret two"},
		},
		{
			name: "YAML List among documents",
			files: map[string]string{"l.yaml": configMap("before") + "---\napiVersion: v1\nkind: List\nitems:\n" +
				"- apiVersion: v1\n  kind: ServiceAccount\n  metadata: {name: sa}\n" +
				"- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d, namespace: n}\n"},
			want: []string{"l.yaml, document 1: ConfigMap before", "l.yaml, document 2, item 1: ServiceAccount sa", "l.yaml, document 2, item 2: apps/Deployment n/d"},
		},
		{
			name:  "empty List",
			files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems: []\n"},
			want:  []string{},
		},
		{
			name: "nested directories in lexical order, other files and hidden ones skipped",
			files: map[string]string{
				"c.yaml":                        configMap("c"),
				"a.yaml":                        configMap("a"),
				"b/z.yml":                       configMap("bz"),
				"b/a/deep.json":                 `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}}`,
				"b/README.md":                   "# not a manifest",
				"b/notes.txt":                   "kind: nonsense",
				".github/workflows/ci.yml":      "on: push\n",
				"b/.hidden.yaml":                "not: [valid",
				"examples/not-kustomized/x.yml": configMap("x"),
			},
			want: []string{
				"a.yaml, document 1: ConfigMap a",
				"b/a/deep.json, document 1: ConfigMap deep",
				"b/z.yml, document 1: ConfigMap bz",
				"c.yaml, document 1: ConfigMap c",
				"examples/not-kustomized/x.yml, document 1: ConfigMap x",
			},
		},
		{
			name:  "a subdirectory only",
			files: map[string]string{"apps/web.yaml": configMap("web"), "other/x.yaml": configMap("x")},
			dir:   "apps",
			want:  []string{"apps/web.yaml, document 1: ConfigMap web"},
		},
		{
			name:  "anchors, aliases and merge keys within bounds",
			files: map[string]string{"m.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  labels: &l {app: web, tier: front}\n  annotations:\n    <<: *l\n    tier: back\n"},
			want:  []string{"m.yaml, document 1: ConfigMap m"},
		},
		{
			name:  "empty tree",
			files: map[string]string{},
			want:  []string{},
		},
		{
			name:  "only empty documents",
			files: map[string]string{"empty.yaml": "", "sep.yaml": "---\n---\n", "c.json": ""},
			want:  []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = "."
			}
			objs, err := Render(tree(tt.files), dir, Limits{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if objs == nil {
				t.Fatal("Render returned a nil slice")
			}
			wantList(t, describe(objs), tt.want)
		})
	}
}

func TestRenderValues(t *testing.T) {
	files := map[string]string{"v.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: v
  labels: &l {app: web, tier: front}
  annotations:
    <<: *l
    tier: back
spec:
  replicas: 3
  big: 18446744073709551615
  ratio: 0.5
  on: true
  yes: yes
  nothing: ~
  when: 2001-12-14
  octal: 0o17
  list: [1, "2", three]
  1: one
`}
	objs, err := Render(tree(files), ".", Limits{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	m := objs[0].Obj.Object
	spec := m["spec"].(map[string]any)
	want := map[string]any{
		"replicas": int64(3), "big": float64(18446744073709551615), "ratio": 0.5, "on": true, "yes": "yes",
		"nothing": nil, "when": "2001-12-14", "octal": int64(15), "1": "one",
	}
	for k, v := range want {
		if spec[k] != v {
			t.Errorf("spec.%s = %#v, want %#v", k, spec[k], v)
		}
	}
	if list := spec["list"].([]any); list[0] != int64(1) || list[1] != "2" || list[2] != "three" {
		t.Errorf("spec.list = %#v", list)
	}
	annotations := objs[0].Obj.GetAnnotations()
	if annotations["app"] != "web" || annotations["tier"] != "back" {
		t.Errorf("merged annotations = %v, want app=web tier=back", annotations)
	}
	// The object must be usable as any unstructured object.
	_ = objs[0].Obj.DeepCopy()
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		dir    string
		limits Limits
		want   string
	}{
		{
			name:  "invalid YAML names file, document and line",
			files: map[string]string{"apps/web.yaml": configMap("a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [b\n"},
			want:  "apps/web.yaml, document 2: invalid YAML: line 11: did not find expected ',' or ']'",
		},
		{
			name:  "invalid YAML after a complete document is counted in the right document",
			files: map[string]string{"x.yaml": configMap("a") + "---\n" + configMap("b") + "---\n  c: d\n e\n"},
			want:  "x.yaml, document 3: invalid YAML: line 16: did not find expected <document start>",
		},
		{
			name:  "tab indentation",
			files: map[string]string{"t.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: t\n"},
			want:  "t.yaml, document 1: invalid YAML: line 4: found character that cannot start any token",
		},
		{
			name:  "a list at top level",
			files: map[string]string{"l.yaml": configMap("a") + "---\n- apiVersion: v1\n- kind: ConfigMap\n"},
			want:  "l.yaml, document 2: a document must be an object (a map), not a list",
		},
		{
			name:  "a scalar at top level",
			files: map[string]string{"s.yaml": "just some text\n"},
			want:  "s.yaml, document 1: a document must be an object (a map), not a single value",
		},
		{
			name:  "a key set twice",
			files: map[string]string{"d.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n"},
			want:  "d.yaml, document 1: field metadata.name: is set twice (lines 4 and 5)",
		},
		{
			name:  "a map as a key",
			files: map[string]string{"k.yaml": "apiVersion: v1\nkind: ConfigMap\ndata:\n  ? {a: b}\n  : c\n"},
			want:  "k.yaml, document 1: field data: line 4: a map key must be a single value, not a map or list",
		},
		{
			name:  "an infinite number",
			files: map[string]string{"n.yaml": "apiVersion: v1\nkind: ConfigMap\nspec:\n  limits: {cpu: .inf}\n"},
			want:  "n.yaml, document 1: field spec.limits.cpu: line 4: infinite and NaN numbers have no JSON form",
		},
		{
			name:  "an explicit tag that does not fit",
			files: map[string]string{"n.yaml": "apiVersion: v1\nkind: ConfigMap\nspec:\n  replicas: !!int three\n"},
			want:  "n.yaml, document 1: field spec.replicas: line 4: the value is not a valid !!int",
		},
		{
			name:  "a merge of a single value",
			files: map[string]string{"n.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: 5\n"},
			want:  "n.yaml, document 1: field metadata: line 4: a << merge takes a map or a list of maps",
		},
		{
			name:  "two documents in a JSON file",
			files: map[string]string{"two.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}` + "\n---\n{}\n"},
			want:  "two.json, document 2: a JSON file holds a single object or List",
		},
		{
			name:  "invalid JSON",
			files: map[string]string{"bad.json": "{\"apiVersion\": \"v1\",\n \"kind\": \"ConfigMap\",,\n}"},
			want:  "bad.json, document 1: invalid YAML: line 2: did not find expected node content",
		},
		{
			name:  "List items that are not a list",
			files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems: {a: b}\n"},
			want:  "l.yaml, document 1: field items: must be a list",
		},
		{
			name:  "a List item that is not an object",
			files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- just text\n"},
			want:  "l.yaml, document 1: field items[1]: must be an object (a map)",
		},
		{
			name:  "an alias that contains itself",
			files: map[string]string{"c.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: &d\n  self: *d\n"},
			want:  "c.yaml, document 1: invalid YAML: line 4: alias *d refers to a node that contains it",
		},
		{
			name:   "more documents than allowed",
			files:  map[string]string{"a.yaml": configMap("a") + "---\n" + configMap("b"), "b.yaml": configMap("c") + "---\n" + configMap("d")},
			limits: Limits{MaxDocuments: 3},
			want:   "b.yaml, document 2: the tree holds more than 3 documents",
		},
		{
			name:   "more List items than allowed",
			files:  map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- {}\n- {}\n- {}\n"},
			limits: Limits{MaxDocuments: 3},
			want:   "l.yaml, document 1, item 3: the tree holds more than 3 documents",
		},
		{
			name: "every bad file is reported",
			files: map[string]string{
				"a.yaml": "a: [",
				"b.yaml": configMap("fine"),
				"c.yaml": "- x\n",
			},
			want: "a.yaml, document 1: invalid YAML: line 1: did not find expected node content\n" +
				"c.yaml, document 1: a document must be an object (a map), not a list",
		},
		{
			name:  "a directory that does not exist",
			files: map[string]string{"a.yaml": configMap("a")},
			dir:   "apps",
			want:  "read apps: open apps: file does not exist",
		},
		{
			name:  "a directory outside the repository",
			files: map[string]string{"a.yaml": configMap("a")},
			dir:   "../elsewhere",
			want:  "../elsewhere: the path is not a directory inside the repository",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = "."
			}
			objs, err := Render(tree(tt.files), dir, tt.limits)
			wantError(t, err, tt.want)
			if objs != nil {
				t.Errorf("Render returned objects with an error: %v", describe(objs))
			}
		})
	}
}

func TestRenderRefusesAliasBombsAndDepth(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		limits Limits
		want   string
	}{
		{
			name: "nine-level billion laughs",
			data: billionLaughs(9),
			want: "bomb.yaml, document 1: line 10: YAML aliases expand the document by more than 10000 values; refusing it as a possible alias bomb",
		},
		{
			name:   "a lower alias limit",
			data:   billionLaughs(2),
			limits: Limits{MaxAliasNodes: 100},
			want:   "bomb.yaml, document 1: line 8: YAML aliases expand the document by more than 100 values; refusing it as a possible alias bomb",
		},
		{
			name: "deep flow nesting",
			data: "apiVersion: v1\nkind: ConfigMap\ndata:\n  x: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n",
			want: "bomb.yaml, document 1: line 4: maps and lists nest more than 64 levels deep",
		},
		{
			name: "nesting beyond the parser's own bound",
			data: strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n",
			want: "bomb.yaml, document 1: invalid YAML: exceeded max depth of 10000",
		},
		{
			name:   "deep nesting reached through an alias",
			data:   "a: &a [[[[x]]]]\nb: [[[[*a]]]]\n",
			limits: Limits{MaxDepth: 8},
			want:   "bomb.yaml, document 1: line 2: maps and lists nest more than 8 levels deep",
		},
		{
			name:   "nesting at the limit is fine but one more is not",
			data:   "a: [[[x]]]\n",
			limits: Limits{MaxDepth: 3},
			want:   "bomb.yaml, document 1: line 1: maps and lists nest more than 3 levels deep",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Render(tree(map[string]string{"bomb.yaml": tt.data}), ".", tt.limits)
			if elapsed := time.Since(start); elapsed > 200*time.Millisecond {
				t.Errorf("refusing took %v", elapsed)
			}
			wantError(t, err, tt.want)
		})
	}
	t.Run("nesting at the limit", func(t *testing.T) {
		objs, err := Render(tree(map[string]string{"ok.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {a: {b: x}}\n"}), ".", Limits{MaxDepth: 3})
		if err != nil || len(objs) != 1 {
			t.Fatalf("Render = %v, %v; want one object", describe(objs), err)
		}
	})
}

func TestRenderFileSystemErrors(t *testing.T) {
	base := tree(map[string]string{
		"apps/a.yaml":   configMap("a"),
		"apps/big.yaml": configMap("big"),
	})
	_, err := Render(refusingFS{base: base, refuse: map[string]bool{"apps/big.yaml": true}}, ".", Limits{})
	wantError(t, err, "read apps/big.yaml: open apps/big.yaml: file exceeds the size limit")
	if !errors.Is(err, errTooLarge) {
		t.Errorf("error %v does not wrap the file system's error", err)
	}
}

func TestRenderKeepsSecretsOutOfErrors(t *testing.T) {
	const canary = "canary-7f3a9c"
	tests := []struct {
		name string
		data string
	}{
		{"a parse error later in the Secret", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: " + canary + "\n  other: [unclosed\n"},
		{"a parse error inside the value", "apiVersion: v1\nkind: Secret\nstringData:\n  password: \"" + canary + "\\q\"\n"},
		{"a bad tag on the value", "apiVersion: v1\nkind: Secret\ndata:\n  password: !!int " + canary + "\n"},
		{"a value set twice", "apiVersion: v1\nkind: Secret\ndata:\n  password: " + canary + "\n  password: " + canary + "\n"},
		{"a Secret that is a list", "- " + canary + "\n"},
		{"a Secret that is a value", canary + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tree(map[string]string{"secret.yaml": tt.data}), ".", Limits{})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("the error shows the Secret value: %v", err)
			}
		})
	}
}
