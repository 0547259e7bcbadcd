package manifest

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: %s
  names: {kind: Widget, plural: widgets}
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v0, served: false, storage: false}
`

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		defaultNS string
		want      []string // "origin: key" after validation
	}{
		{
			name: "namespaced objects get the default namespace; cluster-scoped ones and explicit namespaces are kept",
			files: map[string]string{"all.yaml": configMap("cfg") + "---\n" +
				"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n---\n" +
				"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n" +
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:aggregate-to-view\"}\n"},
			defaultNS: "default",
			want: []string{
				"all.yaml, document 1: ConfigMap default/cfg",
				"all.yaml, document 2: apps/Deployment shop/web",
				"all.yaml, document 3: Namespace team-a",
				"all.yaml, document 4: rbac.authorization.k8s.io/ClusterRole system:aggregate-to-view",
			},
		},
		{
			name: "a namespaced custom resource defined in the same set",
			files: map[string]string{
				"crd.yaml":    strings.Replace(widgetCRD, "%s", "Namespaced", 1),
				"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
			},
			defaultNS: "apps",
			want: []string{
				"crd.yaml, document 1: apiextensions.k8s.io/CustomResourceDefinition widgets.example.com",
				"widget.yaml, document 1: example.com/Widget apps/w",
			},
		},
		{
			name: "a cluster-scoped custom resource defined in the same set",
			files: map[string]string{
				"crd.yaml":    strings.Replace(widgetCRD, "%s", "Cluster", 1),
				"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
			},
			defaultNS: "apps",
			want: []string{
				"crd.yaml, document 1: apiextensions.k8s.io/CustomResourceDefinition widgets.example.com",
				"widget.yaml, document 1: example.com/Widget w",
			},
		},
		{
			name:      "the same name in two namespaces, or in two kinds, is no duplicate",
			files:     map[string]string{"a.yaml": strings.Replace(configMap("x"), "name: x", "name: x\n  namespace: one", 1) + "---\n" + configMap("x") + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"},
			defaultNS: "two",
			want: []string{
				"a.yaml, document 1: ConfigMap one/x",
				"a.yaml, document 2: ConfigMap two/x",
				"a.yaml, document 3: Secret two/x",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(tree(tt.files), ".", Limits{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if err := Validate(objs, clusterScope, tt.defaultNS); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			wantList(t, describe(objs), tt.want)
		})
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		defaultNS string
		want      string
	}{
		{
			name:  "no apiVersion",
			files: map[string]string{"apps/web.yaml": configMap("a") + "---\nkind: ConfigMap\nmetadata: {name: b}\n"},
			want:  "apps/web.yaml, document 2: field apiVersion: is required",
		},
		{
			name:  "no kind",
			files: map[string]string{"apps/web.yaml": "apiVersion: v1\nmetadata: {name: b}\n"},
			want:  "apps/web.yaml, document 1: field kind: is required",
		},
		{
			name:  "no name",
			files: map[string]string{"apps/web.yaml": configMap("a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"},
			want:  "apps/web.yaml, document 2: field metadata.name: is required",
		},
		{
			name:  "no metadata at all",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\n"},
			want:  "x.yaml, document 1: field metadata.name: is required",
		},
		{
			name:  "an empty name",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ''}\n"},
			want:  "x.yaml, document 1: field metadata.name: is required",
		},
		{
			name:  "apiVersion is not a string",
			files: map[string]string{"x.yaml": "apiVersion: 1\nkind: ConfigMap\nmetadata: {name: a}\n"},
			want:  "x.yaml, document 1: field apiVersion: must be a string",
		},
		{
			name:  "kind is not a string",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: [ConfigMap]\nmetadata: {name: a}\n"},
			want:  "x.yaml, document 1: field kind: must be a string",
		},
		{
			name:  "metadata is not a map",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: a\n"},
			want:  "x.yaml, document 1: field metadata: must be an object (a map)",
		},
		{
			name:  "name is not a string",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 12}\n"},
			want:  "x.yaml, document 1: field metadata.name: must be a string",
		},
		{
			name:  "namespace is not a string",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: {x: y}}\n"},
			want:  "x.yaml, document 1: field metadata.namespace: must be a string",
		},
		{
			name:  "a malformed apiVersion",
			files: map[string]string{"x.yaml": "apiVersion: apps/v1/beta\nkind: Deployment\nmetadata: {name: a}\n"},
			want:  `x.yaml, document 1: field apiVersion: "apps/v1/beta" is not a valid group/version`,
		},
		{
			name:  "an apiVersion without a version",
			files: map[string]string{"x.yaml": "apiVersion: apps/\nkind: Deployment\nmetadata: {name: a}\n"},
			want:  `x.yaml, document 1: field apiVersion: "apps/" is not a valid group/version`,
		},
		{
			name:  "a name that is not a DNS subdomain",
			files: map[string]string{"x.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: Web_1}\n"},
			want:  `x.yaml, document 1: field metadata.name: "Web_1" is not a valid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		{
			name:  "a Service name with a dot",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web.v2}\n"},
			want:  `x.yaml, document 1: field metadata.name: "web.v2" is not a valid name: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		},
		{
			name:  "a name with a slash for an unknown kind",
			files: map[string]string{"crd.yaml": strings.Replace(widgetCRD, "%s", "Cluster", 1), "w.yaml": "apiVersion: other.io/v1\nkind: Thing\nmetadata: {name: a/b}\n"},
			want: `w.yaml, document 1: field metadata.name: "a/b" is not a valid name: may not contain "/"` + "\n" +
				`w.yaml, document 1: field kind: other.io/v1 Thing is not served by the cluster, and no CustomResourceDefinition in the set defines it`,
		},
		{
			name:  "an invalid namespace",
			files: map[string]string{"x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: Team_A}\n"},
			want:  `x.yaml, document 1: field metadata.namespace: "Team_A" is not a valid namespace: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		},
		{
			name:  "an unknown kind",
			files: map[string]string{"apps/web.yaml": "apiVersion: apps/v1\nkind: Deploymnt\nmetadata: {name: web}\n"},
			want:  "apps/web.yaml, document 1: field kind: apps/v1 Deploymnt is not served by the cluster, and no CustomResourceDefinition in the set defines it",
		},
		{
			name:  "a custom resource in a version its definition does not serve",
			files: map[string]string{"crd.yaml": strings.Replace(widgetCRD, "%s", "Namespaced", 1), "w.yaml": "apiVersion: example.com/v0\nkind: Widget\nmetadata: {name: w}\n"},
			want:  `w.yaml, document 1: field apiVersion: version "v0" is not served by the CustomResourceDefinition in crd.yaml, document 1`,
		},
		{
			name:  "a custom resource definition without a valid scope",
			files: map[string]string{"crd.yaml": strings.Replace(widgetCRD, "%s", "Everywhere", 1), "w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"},
			want: `crd.yaml, document 1: field spec.scope: must be "Namespaced" or "Cluster"` + "\n" +
				"w.yaml, document 1: field kind: example.com/v1 Widget is not served by the cluster, and no CustomResourceDefinition in the set defines it",
		},
		{
			name:  "a cluster-scoped object with a namespace",
			files: map[string]string{"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, namespace: default}\n"},
			want:  "ns.yaml, document 1: field metadata.namespace: must not be set: Namespace is cluster-scoped",
		},
		{
			name:  "a cluster-scoped custom resource with a namespace",
			files: map[string]string{"crd.yaml": strings.Replace(widgetCRD, "%s", "Cluster", 1), "w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: x}\n"},
			want:  "w.yaml, document 1: field metadata.namespace: must not be set: Widget is cluster-scoped",
		},
		{
			name:      "a namespaced object and no default namespace",
			files:     map[string]string{"cm.yaml": configMap("a")},
			defaultNS: "-",
			want:      "cm.yaml, document 1: field metadata.namespace: is required: the kind is namespaced and there is no default namespace",
		},
		{
			name:  "duplicates within one file",
			files: map[string]string{"apps/web.yaml": configMap("cfg") + "---\n" + configMap("other") + "---\n" + configMap("cfg")},
			want:  "apps/web.yaml, document 3: ConfigMap default/cfg is also defined in apps/web.yaml, document 1",
		},
		{
			name: "duplicates across files, once the default namespace is set",
			files: map[string]string{
				"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n",
				"b.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			},
			want: "b.yaml, document 1: apps/Deployment default/web is also defined in a.yaml, document 1",
		},
		{
			name: "duplicates across API versions of one group",
			files: map[string]string{
				"a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
				"b.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n",
			},
			want: "b.yaml, document 1, item 1: apps/Deployment default/web is also defined in a.yaml, document 1",
		},
		{
			name: "a duplicate between kustomize output and a plain file",
			files: map[string]string{
				"k/kustomization.yaml": "resources:\n- cm.yaml\n",
				"k/cm.yaml":            configMap("shared"),
				"plain.yaml":           configMap("shared"),
			},
			want: "plain.yaml, document 1: ConfigMap default/shared is also defined in k/kustomization.yaml, document 1",
		},
		{
			name: "duplicates from two kustomizations",
			files: map[string]string{
				"base/kustomization.yaml":    "resources:\n- cm.yaml\n",
				"base/cm.yaml":               configMap("shared"),
				"overlay/kustomization.yaml": "resources:\n- ../base\n",
			},
			want: "overlay/kustomization.yaml, document 1: ConfigMap default/shared is also defined in base/kustomization.yaml, document 1",
		},
		{
			name: "every problem at once, in the order of the files",
			files: map[string]string{
				"b.yaml": "kind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n",
				"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
			},
			want: "a.yaml, document 1: field metadata.name: is required\n" +
				"b.yaml, document 1: field apiVersion: is required\n" +
				"b.yaml, document 2: field kind: v1 Gadget is not served by the cluster, and no CustomResourceDefinition in the set defines it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(tree(tt.files), ".", Limits{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			ns := tt.defaultNS
			switch ns {
			case "":
				ns = "default"
			case "-":
				ns = ""
			}
			err = Validate(objs, clusterScope, ns)
			wantError(t, err, tt.want)
			for _, e := range unjoin(err) {
				var me *Error
				if !errors.As(e, &me) {
					t.Errorf("%v is not an *Error", e)
				}
			}
		})
	}
}

// unjoin returns the errors joined in err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestValidateScopeFailure(t *testing.T) {
	discoveryDown := errors.New("the server is currently unable to handle the request")
	failing := scopeFunc(func(schema.GroupVersionKind) (bool, error) { return false, discoveryDown })
	objs, err := Render(tree(map[string]string{"a.yaml": configMap("a") + "---\n" + configMap("b") + "---\nkind: ConfigMap\n"}), ".", Limits{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	err = Validate(objs, failing, "default")
	wantError(t, err, "a.yaml, document 3: field apiVersion: is required\n"+
		"a.yaml, document 3: field metadata.name: is required\n"+
		"look up whether v1 ConfigMap is namespaced: the server is currently unable to handle the request")
	if !errors.Is(err, discoveryDown) {
		t.Errorf("error %v does not wrap the discovery error", err)
	}
	if objs[0].Obj.GetNamespace() != "" {
		t.Errorf("namespace set to %q without an answer from discovery", objs[0].Obj.GetNamespace())
	}
}

// scopeFunc is a Scope made of a function.
type scopeFunc func(schema.GroupVersionKind) (bool, error)

func (f scopeFunc) Namespaced(gvk schema.GroupVersionKind) (bool, error) { return f(gvk) }

func TestValidateHandMadeObjects(t *testing.T) {
	objs := []Object{
		{Origin: Origin{File: "nil.yaml", Doc: 1}},
		{Obj: &unstructured.Unstructured{}, Origin: Origin{File: "empty.yaml", Doc: 1}},
		{Obj: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "ok"}}}},
	}
	err := Validate(objs, clusterScope, "default")
	wantError(t, err, "empty.yaml, document 1: the object is empty\nnil.yaml, document 1: the object is empty")
	if got := objs[2].Key().String(); got != "ConfigMap default/ok" {
		t.Errorf("key = %s", got)
	}
	if got := objs[0].Key(); got != (Key{}) {
		t.Errorf("key of a nil object = %v", got)
	}
}

func TestValidateKeepsSecretsOutOfErrors(t *testing.T) {
	const canary = "canary-c0ffee"
	files := map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {labels: {a: b}}\n" +
		"data:\n  password: " + canary + "\nstringData:\n  token: " + canary + "\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: " + canary + "}\n---\n" +
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: " + canary + "}\n"}
	objs, err := Render(tree(files), ".", Limits{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	err = Validate(objs, clusterScope, "default")
	wantError(t, err, "s.yaml, document 1: field metadata.name: is required\n"+
		"s.yaml, document 3: Secret default/s is also defined in s.yaml, document 2")
}

func TestKeyAndOriginStrings(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"a grouped namespaced key", Key{Group: "apps", Kind: "Deployment", Namespace: "default", Name: "web"}.String(), "apps/Deployment default/web"},
		{"a core namespaced key", Key{Kind: "ConfigMap", Namespace: "default", Name: "cfg"}.String(), "ConfigMap default/cfg"},
		{"a cluster-scoped key", Key{Kind: "Namespace", Name: "team-a"}.String(), "Namespace team-a"},
		{"an origin", Origin{File: "apps/web.yaml", Doc: 2}.String(), "apps/web.yaml, document 2"},
		{"an origin in a List", Origin{File: "l.yaml", Doc: 1, Item: 3}.String(), "l.yaml, document 1, item 3"},
		{"a whole file", Origin{File: "k/kustomization.yaml"}.String(), "k/kustomization.yaml"},
		{"no file", Origin{}.String(), "(unknown file)"},
		{"an error with a field", (&Error{Origin: Origin{File: "apps/web.yaml", Doc: 2}, Field: "metadata.name", Reason: "is required"}).Error(), "apps/web.yaml, document 2: field metadata.name: is required"},
		{"an error without a field", (&Error{Origin: Origin{File: "a.yaml", Doc: 1}, Reason: "bad"}).Error(), "a.yaml, document 1: bad"},
		{"a quoted field", childField(childField("metadata", "annotations"), "plimsoll.dev/strategy"), `metadata.annotations["plimsoll.dev/strategy"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestConfine(t *testing.T) {
	files := map[string]string{
		"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: defaulted}\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: here, namespace: web}\n",
		"other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: other}\n" +
			"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n",
	}
	tests := []struct {
		name       string
		namespaces []string
		want       string
	}{
		{name: "no limit", namespaces: nil},
		{name: "limited", namespaces: []string{"apps", "web"},
			want: "other.yaml, document 1: field metadata.namespace: \"other\" is not among the namespaces this daemon may write in (apps, web)\n" +
				"other.yaml, document 2: field kind: Namespace is cluster-scoped, and this daemon may write only in namespaces apps, web"},
		{name: "the default namespace is limited too", namespaces: []string{"web"},
			want: "app.yaml, document 1: field metadata.namespace: \"apps\" is not among the namespaces this daemon may write in (web)\n" +
				"other.yaml, document 1: field metadata.namespace: \"other\" is not among the namespaces this daemon may write in (web)\n" +
				"other.yaml, document 2: field kind: Namespace is cluster-scoped, and this daemon may write only in namespaces web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(tree(files), ".", Limits{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if err := Validate(objs, clusterScope, "apps"); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			wantError(t, Confine(objs, tt.namespaces), tt.want)
		})
	}
}
