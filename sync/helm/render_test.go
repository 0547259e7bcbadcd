package helm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
	"plimsoll.dev/plimsoll/sync/manifest"
)

func TestRenderChartDirectory(t *testing.T) {
	out, err := renderTree(t, repoFS(nil, "charts/web", webChart), Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap web-cfg", "apiextensions.k8s.io/CustomResourceDefinition widgets.example.com", "apps/Deployment web"}
	if got := keys(out.Objects); !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v (no hook, no test, no notes)", got, want)
	}
	for _, o := range out.Objects {
		if o.Release == nil || o.Release.Name != "web" || o.Release.Version != "1.0.0" || o.Release.Source != "charts/web" {
			t.Errorf("%s has release %+v, want web (web 1.0.0)", o.Key(), o.Release)
		}
		if o.DefaultNamespace != "apps" {
			t.Errorf("%s defaults to namespace %q, want apps", o.Key(), o.DefaultNamespace)
		}
		isCRD := o.Obj.GetKind() == "CustomResourceDefinition"
		if o.CreateOnly != isCRD || (o.Obj.GetAnnotations()[contract.AnnotationPrune] == contract.PruneDisabled) != isCRD {
			t.Errorf("%s: create only %v, annotations %v; want both only on the CRD of crds/", o.Key(), o.CreateOnly, o.Obj.GetAnnotations())
		}
	}
	if len(out.Charts) != 1 {
		t.Fatalf("%d charts, want 1", len(out.Charts))
	}
	var hooks []string
	for _, h := range out.Charts[0].Hooks {
		hooks = append(hooks, fmt.Sprintf("%s %v w%d %v", h.Obj.GetName(), h.Events, h.Weight, h.DeletePolicies))
	}
	slices.Sort(hooks)
	wantHooks := []string{
		"web-first [post-install] w-1 [hook-succeeded]",
		"web-migrate [pre-install pre-upgrade] w5 [before-hook-creation]",
	}
	if !slices.Equal(hooks, wantHooks) {
		t.Errorf("hooks %q, want %q (the test hook left out)", hooks, wantHooks)
	}
}

func TestRenderReleaseValuesInOrder(t *testing.T) {
	files := map[string]string{
		"apps/web.yaml": `apiVersion: plimsoll.dev/v1
kind: HelmChart
metadata: {name: shop, namespace: prod}
spec:
  path: ../charts/web
  valuesFiles: [values/a.yaml, values/b.yaml]
  values: {replicas: 3}
  crds: Skip
`,
		"apps/values/a.yaml": "greeting: from-a\nreplicas: 2\n",
		"apps/values/b.yaml": "greeting: from-b\n",
	}
	out, err := renderTree(t, repoFS(files, "charts/web", webChart), Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap shop-cfg", "apps/Deployment shop"}
	if got := keys(out.Objects); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v: the chart rendered once, by its release, without CRDs", got, want)
	}
	for _, o := range out.Objects {
		if o.DefaultNamespace != "prod" {
			t.Errorf("%s defaults to %q, want the release namespace prod", o.Key(), o.DefaultNamespace)
		}
		switch o.Obj.GetKind() {
		case "ConfigMap":
			if g := o.Obj.Object["data"].(map[string]any)["greeting"]; g != "from-b" {
				t.Errorf("greeting %v, want from-b (the last values file wins)", g)
			}
		case "Deployment":
			if r := o.Obj.Object["spec"].(map[string]any)["replicas"]; r != int64(3) {
				t.Errorf("replicas %v (%T), want 3 (inline values last)", r, r)
			}
		}
	}
}

func TestRenderPostRender(t *testing.T) {
	files := map[string]string{
		"web.yaml": `apiVersion: plimsoll.dev/v1
kind: HelmChart
metadata: {name: web}
spec:
  path: chart
  postRender:
    kustomize:
      commonAnnotations: {team: shop}
      patches:
      - target: {kind: Deployment}
        patch: |
          - op: replace
            path: /spec/replicas
            value: 4
`,
	}
	out, err := renderTree(t, repoFS(files, "chart", webChart), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Objects {
		if o.Obj.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if o.Obj.GetAnnotations()["team"] != "shop" {
			t.Errorf("%s lacks the post-render's annotation: %v", o.Key(), o.Obj.GetAnnotations())
		}
		if o.Obj.GetKind() == "Deployment" && o.Obj.Object["spec"].(map[string]any)["replicas"] != int64(4) {
			t.Errorf("the post-render's patch did not set replicas: %v", o.Obj.Object["spec"])
		}
	}
	if len(out.Charts[0].Hooks) != 2 {
		t.Errorf("%d hooks after the post-render, want 2", len(out.Charts[0].Hooks))
	}
}

func TestRenderNondeterministicIsReportedAndKept(t *testing.T) {
	chart := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: rnd\nversion: 0.1.0\n",
		"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: rnd}
stringData:
  password: {{ randAlphaNum 16 | quote }}
  user: admin
`,
	}
	fsys := repoFS(nil, "rnd", chart)
	r := New(Config{Namespace: "apps"})
	render := func() (*manifest.Rendered, string) {
		r.StartSync()
		out, err := manifest.RenderTree(context.Background(), fsys, ".", manifest.Limits{}, r)
		if err != nil {
			t.Fatal(err)
		}
		return out, out.Objects[0].Obj.Object["stringData"].(map[string]any)["password"].(string)
	}
	first, pw1 := render()
	warnings := first.Charts[0].Warnings
	if len(warnings) != 1 || !strings.Contains(warnings[0], "rnd/templates/secret.yaml") || !strings.Contains(warnings[0], "field stringData.password of Secret rnd") {
		t.Errorf("warnings %q, want one naming rnd/templates/secret.yaml and field stringData.password", warnings)
	}
	_, pw2 := render()
	if pw1 != pw2 {
		t.Errorf("the second sync rendered password %q, the first %q: the render must be kept while the inputs are the same", pw2, pw1)
	}
}

func TestRenderBadInput(t *testing.T) {
	release := func(spec string) map[string]string {
		return map[string]string{"rel.yaml": "apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec:\n" + spec}
	}
	withChart := func(extra map[string]string) map[string]string {
		out := maps.Clone(webChart)
		maps.Copy(out, extra)
		return out
	}
	cases := []struct {
		name  string
		files map[string]string
		chart map[string]string
		want  []string
	}{
		{"template error", nil, withChart(map[string]string{"templates/bad.yaml": "a: b\n{{ .Values.nope.deeper }}\n"}),
			[]string{"chart/Chart.yaml", "chart chart (web 1.0.0)", "web/templates/bad.yaml:2", "nil pointer"}},
		{"values break the schema", release("  path: chart\n  values: {replicas: many}\n"),
			withChart(map[string]string{"values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`}),
			[]string{"rel.yaml, document 1: field spec.values", "web (web 1.0.0)", "replicas", "integer"}},
		{"missing values file", release("  path: chart\n  valuesFiles: [prod.yaml]\n"), webChart,
			[]string{"rel.yaml, document 1: field spec.valuesFiles[0]", "values file prod.yaml does not exist"}},
		{"renders nothing", release("  path: chart\n"), map[string]string{"Chart.yaml": "apiVersion: v2\nname: empty\nversion: 1.0.0\n", "templates/x.yaml": "{{- if .Values.on }}a: b{{ end }}\n"},
			[]string{"rel.yaml, document 1", "chart web (empty 1.0.0) renders no object"}},
		{"unknown field", release("  path: chart\n  valueFiles: [a.yaml]\n"), webChart,
			[]string{"rel.yaml, document 1: field spec.valueFiles", "is not a field"}},
		{"path leaves the repository", release("  path: ../../x\n"), webChart,
			[]string{"field spec.path", "leaves the repository"}},
		{"version range", release("  repo: https://charts.example\n  chart: web\n  version: ^1.0\n"), nil,
			[]string{"field spec.version", "not an exact version"}},
		{"bad hook weight", nil, withChart(map[string]string{"templates/w.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w\n  annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: heavy}\n"}),
			[]string{"web/templates/w.yaml, document 1", `helm.sh/hook-weight`, `"heavy" is not a whole number`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderTree(t, repoFS(tc.files, "chart", tc.chart), Config{})
			mustFail(t, err, tc.want...)
		})
	}
}

func TestFetchFromHTTPRepository(t *testing.T) {
	archive := helmtest.Chart(t, "web", webChart)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - version: 1.0.0\n    urls: [web-1.0.0.tgz]\n    digest: %s\n  - version: 0.9.0\n    urls: [web-0.9.0.tgz]\n", sha256Hex(archive))
	var requests atomic.Int32
	srv := serveRepo(t, index, map[string][]byte{"web-1.0.0.tgz": archive})
	counting := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		requests.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	rel := func(version, digest string) map[string]string {
		spec := fmt.Sprintf("  repo: %s\n  chart: web\n  version: %s\n", srv.URL, version)
		if digest != "" {
			spec += "  digest: " + digest + "\n"
		}
		return map[string]string{"web.yaml": "apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec:\n" + spec}
	}
	r := New(Config{Namespace: "apps", HTTP: counting})
	for i := 0; i < 2; i++ {
		r.StartSync()
		out, err := manifest.RenderTree(context.Background(), repoFS(rel("1.0.0", "sha256:"+sha256Hex(archive)), "x", nil), ".", manifest.Limits{}, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(out.Objects); len(got) != 3 || out.Charts[0].Release.Source != srv.URL {
			t.Errorf("objects %v from %q, want the chart's three from %s", got, out.Charts[0].Release.Source, srv.URL)
		}
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests for two syncs, want 2: the index and the archive, once", n)
	}

	t.Run("unknown version", func(t *testing.T) {
		_, err := renderTree(t, repoFS(rel("2.0.0", ""), "x", nil), Config{})
		mustFail(t, err, "web.yaml, document 1: field spec.chart", "has no version 2.0.0 of chart web (it has 1.0.0, 0.9.0)")
		asManifestError(t, err)
	})
	t.Run("digest differs", func(t *testing.T) {
		_, err := renderTree(t, repoFS(rel("1.0.0", "sha256:"+strings.Repeat("0", 64)), "x", nil), Config{})
		mustFail(t, err, "not the sha256:0000", "the release pins")
	})
	t.Run("index over its limit", func(t *testing.T) {
		_, err := renderTree(t, repoFS(rel("1.0.0", ""), "x", nil), Config{Limits: Limits{MaxIndexBytes: 64}})
		mustFail(t, err, "index "+srv.URL+"/index.yaml", "more than the limit of 64")
	})
	t.Run("archive over its limit", func(t *testing.T) {
		_, err := renderTree(t, repoFS(rel("1.0.0", ""), "x", nil), Config{Limits: Limits{MaxArchiveBytes: 100}})
		mustFail(t, err, "web-1.0.0.tgz", "more than the limit of 100")
	})
	t.Run("index digest differs", func(t *testing.T) {
		lying := serveRepo(t, fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - version: 1.0.0\n    urls: [web-1.0.0.tgz]\n    digest: %s\n", strings.Repeat("ab", 32)),
			map[string][]byte{"web-1.0.0.tgz": archive})
		files := map[string]string{"web.yaml": fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {repo: %q, chart: web, version: 1.0.0}\n", lying.URL)}
		_, err := renderTree(t, repoFS(files, "x", nil), Config{})
		mustFail(t, err, "web.yaml, document 1: field spec.chart", "has digest sha256:"+sha256Hex(archive), "not the "+strings.Repeat("ab", 32)+" its index lists")
	})
	t.Run("unreachable", func(t *testing.T) {
		down := httptest.NewServer(http.NotFoundHandler())
		url := down.URL
		down.Close()
		files := map[string]string{"web.yaml": fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec: {repo: %q, chart: web, version: 1.0.0}\n", url)}
		_, err := renderTree(t, repoFS(files, "x", nil), Config{})
		mustFail(t, err, "web.yaml, document 1: chart web (web 1.0.0): chart repository "+url+" unreachable since ")
		var unreachable *UnreachableError
		if !errors.As(err, &unreachable) {
			t.Errorf("error %v is not an UnreachableError", err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestReadArchiveRefuses(t *testing.T) {
	ok := helmtest.Entry{Name: "web/Chart.yaml", Body: "apiVersion: v2\nname: web\nversion: 1.0.0\n"}
	cases := []struct {
		name    string
		entries []helmtest.Entry
		lim     Limits
		want    string
	}{
		{"tar slip", []helmtest.Entry{ok, {Name: "web/../../etc/cron.d/x", Body: "x"}}, Limits{}, "entry web/../../etc/cron.d/x leaves the chart's folder"},
		{"absolute path", []helmtest.Entry{ok, {Name: "/etc/passwd", Body: "x"}}, Limits{}, "entry /etc/passwd has an absolute path"},
		{"symlink", []helmtest.Entry{ok, {Name: "web/templates/x.yaml", Link: "/etc/passwd"}}, Limits{}, "entry web/templates/x.yaml is a link (to /etc/passwd)"},
		{"hard link", []helmtest.Entry{ok, {Name: "web/values.yaml", Link: "web/Chart.yaml", Hard: true}}, Limits{}, "is a link"},
		{"file over its limit", []helmtest.Entry{ok, {Name: "web/big.txt", Body: strings.Repeat("x", 200)}}, Limits{MaxFileBytes: 100}, "big.txt holds 200 bytes, more than the 100"},
		{"chart over its limit", []helmtest.Entry{ok, {Name: "web/a.txt", Body: strings.Repeat("x", 90)}, {Name: "web/b.txt", Body: strings.Repeat("x", 90)}}, Limits{MaxChartBytes: 150}, "more than 150 bytes once unpacked"},
		{"too many files", []helmtest.Entry{ok, {Name: "web/a.txt", Body: "a"}, {Name: "web/b.txt", Body: "b"}}, Limits{MaxChartFiles: 2}, "more than 2 files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readArchive(helmtest.Archive(t, tc.entries...), tc.lim.withDefaults(), "chart web 1.0.0 from https://charts.example")
			mustFail(t, err, "chart web 1.0.0 from https://charts.example", tc.want)
		})
	}
	t.Run("nested vendored archive", func(t *testing.T) {
		inner := helmtest.Archive(t, helmtest.Entry{Name: "db/Chart.yaml", Body: "apiVersion: v2\nname: db\nversion: 1.0.0\n"}, helmtest.Entry{Name: "db/x", Link: "/"})
		_, err := readArchive(helmtest.Archive(t, ok, helmtest.Entry{Name: "web/charts/db-1.0.0.tgz", Body: string(inner)}), Limits{}.withDefaults(), "chart web")
		mustFail(t, err, "chart web charts/db-1.0.0.tgz: entry db/x is a link")
	})
}

func TestDependencies(t *testing.T) {
	dbChart := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: db\nversion: 2.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-db}\n",
	}
	cacheChart := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: cache\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-cache}\n",
	}
	archive := helmtest.Chart(t, "db", dbChart)
	var fetched atomic.Int32
	srv := serveRepo(t, "apiVersion: v1\nentries:\n  db:\n  - version: 2.1.0\n    urls: [db-2.1.0.tgz]\n  metrics:\n  - version: 1.0.0\n    urls: [metrics-1.0.0.tgz]\n",
		map[string][]byte{"db-2.1.0.tgz": archive})
	counting := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			fetched.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	app := map[string]string{
		"Chart.yaml": fmt.Sprintf(`apiVersion: v2
name: app
version: 1.0.0
dependencies:
- {name: db, version: "~2.1", repository: %q}
- {name: metrics, version: "1.0.0", repository: %q, condition: metrics.enabled}
- {name: cache, version: "1.0.0", repository: "file://../cache"}
`, srv.URL, srv.URL),
		"Chart.lock": fmt.Sprintf(`dependencies:
- {name: db, version: 2.1.0, repository: %q}
- {name: metrics, version: 1.0.0, repository: %q}
- {name: cache, version: 1.0.0, repository: "file://../cache"}
`, srv.URL, srv.URL),
		"values.yaml":       "metrics: {enabled: false}\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n",
		// A vendored dependency, used as it is.
		"charts/cache/Chart.yaml":        cacheChart["Chart.yaml"],
		"charts/cache/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-vendored}\n",
	}
	out, err := renderTree(t, repoFS(nil, "app", app), Config{HTTP: counting})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap app", "ConfigMap app-db", "ConfigMap app-vendored"}
	if got := keys(out.Objects); !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v: db fetched, cache vendored, metrics disabled", got, want)
	}
	if n := fetched.Load(); n != 1 {
		t.Errorf("%d archives fetched, want 1: the disabled metrics is not fetched", n)
	}

	t.Run("lock out of date", func(t *testing.T) {
		stale := maps.Clone(app)
		stale["Chart.yaml"] = strings.Replace(app["Chart.yaml"], `"~2.1"`, `"~3.0"`, 1)
		_, err := renderTree(t, repoFS(nil, "app", stale), Config{})
		mustFail(t, err, "app/Chart.yaml: field dependencies[0]", "dependency db", "Chart.lock pins 2.1.0, outside the range ~3.0")
	})
	t.Run("no Chart.lock", func(t *testing.T) {
		unlocked := maps.Clone(app)
		delete(unlocked, "Chart.lock")
		_, err := renderTree(t, repoFS(nil, "app", unlocked), Config{})
		mustFail(t, err, "app/Chart.yaml: field dependencies[0]", "dependency db", "no Chart.lock pinning its version")
	})
	t.Run("vendored archive holding a link", func(t *testing.T) {
		vendored := map[string]string{"Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n", "templates/cm.yaml": app["templates/cm.yaml"],
			"charts/db-2.1.0.tgz": string(helmtest.Archive(t, helmtest.Entry{Name: "db/Chart.yaml", Body: dbChart["Chart.yaml"]}, helmtest.Entry{Name: "db/templates/cm.yaml", Link: "/etc/passwd"}))}
		_, err := renderTree(t, repoFS(nil, "app", vendored), Config{})
		mustFail(t, err, "vendored chart app/charts/db-2.1.0.tgz: entry db/templates/cm.yaml is a link (to /etc/passwd)")
	})
}

func TestParseReleaseFields(t *testing.T) {
	doc := map[string]any{
		"apiVersion": "plimsoll.dev/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"repo": "oci://127.0.0.1:5000/charts", "chart": "web", "version": "1.2.3",
			"digest": "sha256:" + strings.Repeat("a", 64), "plainHTTP": true,
			"valuesFiles": []any{"values/prod.yaml"}, "crds": "CreateReplace", "lookup": true, "hookTimeout": "90s",
		},
	}
	rel, err := ParseRelease(manifest.Origin{File: "apps/web.yaml", Doc: 1}, doc, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Name != "web" || rel.Namespace != "shop" || rel.Repo != "oci://127.0.0.1:5000/charts" || !rel.PlainHTTP ||
		rel.ValuesFiles[0] != "apps/values/prod.yaml" || rel.CRDs != CRDCreateReplace || !rel.Lookup || rel.HookTimeout.Seconds() != 90 {
		t.Errorf("parsed %+v", rel)
	}
}
