//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// shopChart is a chart kept in Git for the tests: a ConfigMap and a Service
// from values, a Deployment whose strategy annotations and image come from
// values, a CRD (crds/) with a custom resource of it, install hooks of
// weights 2 and -3, upgrade hooks of weights 10 and 1, a test hook, and a
// vendored dependency under charts/. The CRD's group holds the namespace,
// so that tests running at once do not share it.
func shopChart(ns string) map[string]string {
	group := ns + ".example.com"
	job := func(name, events, weight, image string) string {
		return fmt.Sprintf(`---
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations:
    helm.sh/hook: %s
    helm.sh/hook-weight: "%s"
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: %s}]
`, name, events, weight, image)
	}
	return map[string]string{
		"charts/shop/Chart.yaml":  "apiVersion: v2\nname: shop\nversion: 1.0.0\n",
		"charts/shop/values.yaml": "greeting: hello\nimage: registry.example/shop:v1\nstrategy: rolling\nmigrateImage: registry.example/migrate:v1\n",
		"charts/shop/templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-static
data:
  fixed: "yes"
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{name: http, port: 80, targetPort: 8080}]
`,
		"charts/shop/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  annotations:
    plimsoll.dev/strategy: {{ .Values.strategy }}
    {{- if eq .Values.strategy "canary" }}
    plimsoll.dev/service: {{ .Release.Name }}
    plimsoll.dev/steps: "25%, pause, 100%"
    {{- end }}
spec:
  replicas: 4
  progressDeadlineSeconds: 60
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: shop, image: {{ .Values.image }}, ports: [{containerPort: 8080}]}]
`,
		"charts/shop/templates/widget.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}-widget\nspec:\n  size: 3\n", group),
		"charts/shop/crds/widgets.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group),
		"charts/shop/templates/hooks.yaml": job("{{ .Release.Name }}-install-b", "pre-install", "2", "registry.example/migrate:v1") +
			job("{{ .Release.Name }}-install-a", "pre-install", "-3", "registry.example/migrate:v1") +
			job("{{ .Release.Name }}-upgrade-b", "pre-upgrade", "10", "{{ .Values.migrateImage }}") +
			job("{{ .Release.Name }}-upgrade-a", "pre-upgrade", "1", "registry.example/migrate:v1"),
		"charts/shop/templates/tests/smoke.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-smoke\n  annotations: {helm.sh/hook: test}\nspec:\n  containers: [{name: t, image: registry.example/smoke:v1}]\n",
		// A vendored dependency, used as it is.
		"charts/shop/charts/cache/Chart.yaml":        "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"charts/shop/charts/cache/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cache\n",
	}
}

// shopRelease is the release document of shopChart, with values files.
func shopRelease(extraSpec string) map[string]string {
	return map[string]string{
		"apps/shop.yaml": `apiVersion: plimsoll.dev/v1
kind: HelmChart
metadata:
  name: shop
spec:
  path: ../charts/shop
  valuesFiles: [values/shop.yaml]
  crds: CreateReplace
` + extraSpec,
		"apps/values/shop.yaml": "greeting: bonjour\n",
	}
}

// merge returns the files of every map, the later ones winning.
func merge(files ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range files {
		maps.Copy(out, m)
	}
	return out
}

// hookLines returns the names of the hooks the sync's log says it ran, in
// order.
func hookLines(out string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`running hook.*? name=(\S+)`).FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestHelmChartInGit syncs a chart kept in Git through its release
// document: install hooks in weight order, the CRD and its custom
// resource, the vendored dependency; then a values change runs the upgrade
// hooks and writes only the ConfigMap it changed; then a failing
// pre-upgrade hook stops the next commit with nothing applied; and
// removing the chart prunes everything it rendered.
func TestHelmChartInGit(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	widgets := schema.GroupVersionResource{Group: s.ns + ".example.com", Version: "v1", Resource: "widgets"}
	s.repo.Commit("shop chart", merge(shopChart(s.ns), shopRelease("")))

	t.Log("1. install: pre-install hooks by weight, then every object")
	out, code := s.syncOnce(t, "--path", "apps")
	if code != 0 {
		t.Fatalf("sync exited %d:\n%s", code, out)
	}
	if got := hookLines(out); strings.Join(got, ",") != "shop-install-a,shop-install-b" {
		t.Errorf("hooks run %v, want shop-install-a (weight -3) then shop-install-b (2), no upgrade or test hook", got)
	}
	objs := []object{
		{configMaps, s.ns, "shop-config"}, {configMaps, s.ns, "shop-static"}, {configMaps, s.ns, "shop-cache"},
		{services, s.ns, "shop"}, {widgets, s.ns, "shop-widget"}, {crds, "", "widgets." + s.ns + ".example.com"},
	}
	for _, o := range objs {
		if resourceVersion(t, o) == "" {
			t.Errorf("%s was not applied", o)
		}
	}
	if _, err := suite.client.AppsV1().Deployments(s.ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment shop: %v", err)
	}
	cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "shop-config", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "bonjour" {
		t.Errorf("ConfigMap shop-config %v (%v), want greeting bonjour from the values file", cm.Data, err)
	}
	if _, err := suite.client.CoreV1().Pods(s.ns).Get(context.Background(), "shop-smoke", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the test hook Pod shop-smoke exists (%v): a sync must not run test hooks", err)
	}
	msg := s.status(t)["plimsoll.dev/message"]
	if !strings.Contains(msg, "charts: shop (shop 1.0.0)") {
		t.Errorf("status message %q does not name the chart and its version", msg)
	}

	t.Log("2. a poll writes nothing and runs no hook")
	before := resourceVersions(t, objs)
	out, code = s.syncOnce(t, "--path", "apps")
	if code != 0 || len(hookLines(out)) != 0 {
		t.Errorf("second sync exited %d and ran hooks %v, want 0 and none:\n%s", code, hookLines(out), out)
	}
	for _, o := range objs {
		if now := resourceVersion(t, o); now != before[o] {
			t.Errorf("%s rewritten by a poll (%s, then %s)", o, before[o], now)
		}
	}

	t.Log("3. a values change: pre-upgrade hooks by weight, only the changed ConfigMap written")
	s.repo.Commit("greet in German", map[string]string{"apps/values/shop.yaml": "greeting: hallo\n"})
	out, code = s.syncOnce(t, "--path", "apps")
	if code != 0 {
		t.Fatalf("sync exited %d:\n%s", code, out)
	}
	if got := hookLines(out); strings.Join(got, ",") != "shop-upgrade-a,shop-upgrade-b" {
		t.Errorf("hooks run %v, want shop-upgrade-a (weight 1) then shop-upgrade-b (10)", got)
	}
	config := object{configMaps, s.ns, "shop-config"}
	for _, o := range objs {
		changed := resourceVersion(t, o) != before[o]
		if changed != (o == config) {
			t.Errorf("%s written: %v; want only %s written", o, changed, config)
		}
	}

	t.Log("4. a failing pre-upgrade hook stops the commit: nothing applied, the Job named")
	before = resourceVersions(t, objs)
	s.repo.Commit("migrate with a broken image", map[string]string{
		"apps/values/shop.yaml": "greeting: hej\nmigrateImage: registry.example/job-fails:v2\n",
	})
	out, code = s.syncOnce(t, "--path", "apps")
	if code == 0 {
		t.Fatalf("sync with a failing hook exited 0:\n%s", out)
	}
	msg = s.status(t)["plimsoll.dev/message"]
	for _, want := range []string{"pre-upgrade hook failed", "chart shop (shop 1.0.0): pre-upgrade hook Job " + s.ns + "/shop-upgrade-b", "the Job failed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("status message %q does not hold %q", msg, want)
		}
	}
	for _, o := range objs {
		if now := resourceVersion(t, o); now != before[o] {
			t.Errorf("%s written though the pre-upgrade hook failed", o)
		}
	}

	t.Log("5. the chart removed from Git: everything it rendered is pruned")
	s.repo.Commit("remove the shop", map[string]string{
		"apps/shop.yaml": "", "apps/values/shop.yaml": "",
		"apps/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
	})
	if out, code = s.syncOnce(t, "--path", "apps"); code != 0 {
		t.Fatalf("sync exited %d:\n%s", code, out)
	}
	for _, o := range objs {
		if o.gvr == widgets {
			continue // gone with its CRD
		}
		waitFor(t, o.String()+" to be pruned", func(context.Context) (bool, error) { return resourceVersion(t, o) == "", nil })
	}
	waitFor(t, "Deployment shop to be pruned", func(ctx context.Context) (bool, error) {
		_, err := suite.client.AppsV1().Deployments(s.ns).Get(ctx, "shop", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// TestHelmChartBadInput checks that a chart that cannot be rendered fails
// the whole commit with an error naming the chart and the file, applies
// nothing of it, and keeps what runs.
func TestHelmChartBadInput(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	base := merge(shopChart(s.ns), shopRelease(""))
	s.repo.Commit("shop chart", base)
	s.mustSync(t, "--path", "apps")
	config := object{configMaps, s.ns, "shop-config"}
	good := resourceVersion(t, config)
	applied := s.status(t)["plimsoll.dev/commit"]

	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"template error", map[string]string{"charts/shop/templates/bad.yaml": "a: {{ .Values.nope.deeper }}\n"},
			[]string{"render failed", "apps/shop.yaml, document 1", "chart shop (shop 1.0.0)", "shop/templates/bad.yaml:1", "nil pointer"}},
		{"values against the schema", map[string]string{"charts/shop/values.schema.json": `{"type": "object", "properties": {"greeting": {"type": "integer"}}}`},
			[]string{"render failed", "apps/shop.yaml, document 1: field spec.values", "greeting", "integer"}},
		{"missing values file", map[string]string{"apps/values/shop.yaml": ""},
			[]string{"render failed", "apps/shop.yaml, document 1: field spec.valuesFiles[0]", "values file apps/values/shop.yaml does not exist"}},
		{"renders nothing", map[string]string{"apps/shop.yaml": "apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: shop}\nspec:\n  path: ../empty\n",
			"empty/Chart.yaml": "apiVersion: v2\nname: empty\nversion: 0.0.1\n", "empty/templates/none.yaml": "{{- if .Values.on }}x: y{{ end }}\n"},
			[]string{"render failed", "chart shop (empty 0.0.1) renders no object"}},
	}
	for _, tc := range cases {
		t.Log(tc.name)
		head := s.repo.Commit(tc.name, tc.files)
		out, code := s.syncOnce(t, "--path", "apps")
		if code == 0 {
			t.Fatalf("%s: sync exited 0:\n%s", tc.name, out)
		}
		st := s.status(t)
		for _, want := range append(tc.want, "commit "+head[:7]+" not applied", "still running "+applied[:7]) {
			if !strings.Contains(st["plimsoll.dev/message"], want) {
				t.Errorf("%s: status message %q does not hold %q", tc.name, st["plimsoll.dev/message"], want)
			}
		}
		if st["plimsoll.dev/commit"] != applied || resourceVersion(t, config) != good {
			t.Errorf("%s: the commit applied is %s and shop-config changed: want %s kept, untouched", tc.name, st["plimsoll.dev/commit"], applied)
		}
		undo := map[string]string{}
		for name := range tc.files {
			undo[name] = base[name] // "" removes a file the case added
		}
		s.repo.Commit("undo "+tc.name, undo)
	}
}

// TestHelmChartCanary rolls a chart's Deployment by canary, the strategy
// coming from the chart's values: a new image goes to shop-canary first,
// and the stable Deployment keeps the old one until the promote.
func TestHelmChartCanary(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("shop chart, canary", merge(shopChart(s.ns), shopRelease("  values: {strategy: canary}\n")))
	kit.StartDaemon(t, s, "--interval", "1s", "--path", "apps")
	waitForDeployment(t, s.ns, "shop", "revision 1 Healthy", phaseIs(1, "Healthy"))

	s.repo.Commit("shop v2", map[string]string{"apps/shop.yaml": strings.Replace(shopRelease("")["apps/shop.yaml"], "crds: CreateReplace", "crds: CreateReplace\n  values: {strategy: canary, image: registry.example/shop:v2}", 1)})
	waitForDeployment(t, s.ns, "shop", "canary step 2/3 waiting for promote", phaseIs(2, "Paused", "canary step 2/3"))
	canary, err := suite.client.AppsV1().Deployments(s.ns).Get(context.Background(), "shop-canary", metav1.GetOptions{})
	if err != nil || canary.Spec.Template.Spec.Containers[0].Image != "registry.example/shop:v2" {
		t.Fatalf("shop-canary: %v, want it running registry.example/shop:v2", err)
	}
	stable, err := suite.client.AppsV1().Deployments(s.ns).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil || stable.Spec.Template.Spec.Containers[0].Image != "registry.example/shop:v1" {
		t.Errorf("stable shop: %v, want it still on registry.example/shop:v1", err)
	}
	command(t, s.ns, "shop", "promote")
	waitForDeployment(t, s.ns, "shop", "revision 2 Healthy", phaseIs(2, "Healthy"))
}

// TestHelmChartPollWritesNothing syncs a chart whose DaemonSet sets
// minReadySeconds: 0, as ingress-nginx's does: the API server does not
// store a zero there, so the live object never shows it and every sync
// applies the DaemonSet again, which the server leaves as it is. The poll
// after the first sync must then write nothing: no object, and no Event
// or log line saying that something was applied.
func TestHelmChartPollWritesNothing(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("agent chart", map[string]string{
		"agent/Chart.yaml": "apiVersion: v2\nname: agent\nversion: 1.0.0\n",
		"agent/templates/daemonset.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}
spec:
  minReadySeconds: 0
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers: [{name: agent, image: registry.example/agent:v1}]
`,
	})
	s.mustSync(t)
	// The DaemonSet controller writes its status meanwhile: the
	// generation, which only a change of the spec moves, tells a write.
	generation := func() int64 {
		ds, err := suite.client.AppsV1().DaemonSets(s.ns).Get(context.Background(), "agent", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("DaemonSet agent: %v", err)
		}
		return ds.Generation
	}
	before := generation()

	out, code := s.syncOnce(t)
	if code != 0 {
		t.Fatalf("poll exited %d:\n%s", code, out)
	}
	for _, said := range []string{`msg="sync applied"`, "msg=applied"} {
		if strings.Contains(out, said) {
			t.Errorf("the poll logged %s, though it wrote nothing:\n%s", said, out)
		}
	}
	if now := generation(); now != before {
		t.Errorf("the poll rewrote DaemonSet agent's spec (generation %d, then %d)", before, now)
	}
	var synced []string
	for _, e := range s.events(t) {
		if e.Reason == "Synced" {
			synced = append(synced, fmt.Sprintf("%s (x%d)", e.Message, e.Count))
		}
	}
	if len(synced) != 1 {
		t.Errorf("Synced Events %q, want the first sync's alone", synced)
	}
}

// TestHelmChartLookup renders a template that calls lookup: off by
// default, it answers nothing, as helm template does; turned on in the
// release, it reads the cluster, at every sync, since such a render is
// never kept (a daemon asked to sync the same commit again looks up
// again).
func TestHelmChartLookup(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	ctx := context.Background()
	source := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"color": "blue"}}
	if _, err := suite.client.CoreV1().ConfigMaps(s.ns).Create(ctx, source, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mirror := func() string {
		cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(ctx, "mirror", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ConfigMap mirror: %v", err)
		}
		return cm.Data["color"]
	}
	release := "apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: mirror}\nspec:\n  path: ../charts/mirror\n"
	s.repo.Commit("mirror chart", map[string]string{
		"charts/mirror/Chart.yaml": "apiVersion: v2\nname: mirror\nversion: 1.0.0\n",
		"charts/mirror/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mirror}\n" +
			`data: {color: {{ dig "data" "color" "none" (lookup "v1" "ConfigMap" .Release.Namespace "source") | quote }}}` + "\n",
		"apps/mirror.yaml": release,
	})
	s.mustSync(t, "--path", "apps")
	if got := mirror(); got != "none" {
		t.Errorf("lookup off: mirror's color %q, want none (lookup answers nothing)", got)
	}

	head := s.repo.Commit("lookup on", map[string]string{"apps/mirror.yaml": release + "  lookup: true\n"})
	s.mustSync(t, "--path", "apps")
	if got := mirror(); got != "blue" {
		t.Errorf("lookup on: mirror's color %q, want blue, from ConfigMap source", got)
	}

	t.Log("the daemon, asked for a sync of the same commit, looks up again: such a render is never kept")
	kit.StartDaemon(t, s, "--interval", "1s", "--path", "apps")
	s.waitForCommit(t, head)
	source.Data["color"] = "green"
	if _, err := suite.client.CoreV1().ConfigMaps(s.ns).Update(ctx, source, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	request := []byte(`{"metadata":{"annotations":{"` + contract.AnnotationRequestedAt + `":"green"}}}`)
	if _, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Patch(ctx, "plimsoll-sync-"+s.ns, types.MergePatchType, request, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ConfigMap mirror to turn green", func(context.Context) (bool, error) { return mirror() == "green", nil })
}
