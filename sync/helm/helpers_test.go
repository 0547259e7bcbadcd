package helm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// webChart is a small chart: a ConfigMap and a Deployment from values, a
// pre-install/pre-upgrade hook Job of weight 5 and a post-install one of
// weight -1, a test hook, and a CRD in crds/.
var webChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
	"values.yaml": "greeting: hello\nreplicas: 1\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  greeting: {{ .Values.greeting | quote }}
`,
	"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: web, image: nginx}]}
`,
	"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "5"
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-first
  annotations:
    helm.sh/hook: post-install
    helm.sh/hook-weight: "-1"
    helm.sh/hook-delete-policy: hook-succeeded
`,
	"templates/tests/test.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {helm.sh/hook: test}
`,
	"templates/NOTES.txt": "Thanks for installing {{ .Release.Name }}.\n",
	"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
`,
}

// repoFS returns a repository holding files, and the chart at dir.
func repoFS(files map[string]string, dir string, chartFiles map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	for name, data := range chartFiles {
		fsys[dir+"/"+name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// renderTree renders fsys with a Renderer of cfg.
func renderTree(t *testing.T, fsys fstest.MapFS, cfg Config) (*manifest.Rendered, error) {
	t.Helper()
	if cfg.Namespace == "" {
		cfg.Namespace = "apps"
	}
	r := New(cfg)
	r.StartSync()
	return manifest.RenderTree(context.Background(), fsys, ".", manifest.Limits{}, r)
}

// mustFail asserts that err is set and holds every one of parts.
func mustFail(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one holding %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not hold %q", err, p)
		}
	}
}

// keys names the objects: "Kind namespace/name", sorted.
func keys(objs []manifest.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Key().String())
	}
	sort.Strings(out)
	return out
}

// serveRepo serves an HTTP chart repository of archives by file name,
// with index as its index.yaml.
func serveRepo(t *testing.T, index string, archives map[string][]byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "index.yaml" {
			_, _ = w.Write([]byte(index))
			return
		}
		data, ok := archives[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// asManifestError asserts that err is bad input.
func asManifestError(t *testing.T, err error) *manifest.Error {
	t.Helper()
	var me *manifest.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v is not bad input (*manifest.Error)", err)
	}
	return me
}
