//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// example returns the files of examples/<dir> for a Git commit, with each
// old -> new pair of replace applied to every file's text. A pair that
// matches nothing fails the test, so that an edited example cannot make a
// test silently test something else.
func example(t *testing.T, dir string, replace ...string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(suite.root, "examples", dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("read examples/%s: %v (%d files)", dir, err, len(paths))
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = string(b)
	}
	for i := 0; i+1 < len(replace); i += 2 {
		found := false
		for name, text := range files {
			if strings.Contains(text, replace[i]) {
				files[name], found = strings.ReplaceAll(text, replace[i], replace[i+1]), true
			}
		}
		if !found {
			t.Fatalf("examples/%s: no file contains %q", dir, replace[i])
		}
	}
	return files
}

// getDeployment reads Deployment name; nil when it does not exist.
func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := suite.client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return d
}

// waitForDeployment waits until Deployment name exists and cond holds for
// it, and returns it as last read.
func waitForDeployment(t *testing.T, ns, name, describe string, cond func(d *appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, name+": "+describe, func(ctx context.Context) (bool, error) {
		var err error
		d, err = suite.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cond(d), nil
	})
	return d
}

// phaseIs is a waitForDeployment condition: revision and phase recorded,
// and the message containing each of contains.
func phaseIs(revision int, phase string, contains ...string) func(d *appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool {
		a := d.Annotations
		if a["plimsoll.dev/revision"] != fmt.Sprint(revision) || a["plimsoll.dev/phase"] != phase {
			return false
		}
		for _, c := range contains {
			if !strings.Contains(a["plimsoll.dev/message"], c) {
				return false
			}
		}
		return true
	}
}

// scaledTo is a waitForDeployment condition: n replicas asked for, the
// Deployment controller caught up, n pods in all and n available.
func scaledTo(n int32) func(d *appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool {
		return d.Spec.Replicas != nil && *d.Spec.Replicas == n && d.Status.ObservedGeneration >= d.Generation &&
			d.Status.Replicas == n && d.Status.AvailableReplicas == n
	}
}

// command sets plimsoll.dev/command on Deployment name, as the CLI does.
func command(t *testing.T, ns, name, cmd string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"plimsoll.dev/command":%q}}}`, cmd)
	_, err := suite.client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("set command %s on %s: %v", cmd, name, err)
	}
}

// selector returns the selector of Service name.
func selector(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	svc, err := suite.client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read Service %s: %v", name, err)
	}
	return svc.Spec.Selector
}

// withPrefix returns the names in pods that start with prefix: the pods of
// the Deployment that prefix names. A pod handed over to another
// Deployment (a canary's, now the stable's; see ownerNote) counts for the
// one that owns it.
func withPrefix(pods []string, prefix string) []string {
	var out []string
	for _, p := range pods {
		name, owner, noted := strings.Cut(p, " (")
		switch {
		case noted && strings.HasPrefix(strings.TrimSuffix(owner, ")")+"-", prefix):
			// Handed over: the Deployment that owns it now counts.
			out = append(out, name)
		case !noted && strings.HasPrefix(name, prefix):
			out = append(out, name)
		}
	}
	return out
}

// allWithPrefix reports whether pods is not empty and every name starts
// with prefix.
func allWithPrefix(pods []string, prefix string) bool {
	return len(pods) > 0 && len(withPrefix(pods, prefix)) == len(pods)
}

// checkNeverServed checks the Service's endpoints since mark: no ready pod
// whose name starts with prefix (the failed revision's), and never fewer
// than n ready pods.
func checkNeverServed(t *testing.T, w *endpointWatch, mark int, prefix string, n int) {
	t.Helper()
	history := w.history(mark)
	if served := w.fewestSince(mark, func(pods []string) int { return -len(withPrefix(pods, prefix)) }); served < 0 {
		t.Errorf("%d pods of the failed revision (%s) served; history:\n%s", -served, prefix, strings.Join(history, "\n"))
	}
	if got, pods := w.minReadySince(mark); got < n {
		t.Errorf("the Service had %d ready endpoints (%v), want never fewer than %d; history:\n%s",
			got, pods, n, strings.Join(history, "\n"))
	}
}

// checkQuiet checks that the Deployments named keep their resourceVersion
// for 2 seconds: a workload waiting (for promote, say) writes nothing. The
// controller writes a status to a workload's Deployments one after the
// other, so the 2 seconds start once every one of them shows the first
// one's status.
func checkQuiet(t *testing.T, ns string, names ...string) {
	t.Helper()
	versions := map[string]string{}
	waitFor(t, "one status on "+strings.Join(names, ", "), func(ctx context.Context) (bool, error) {
		var first map[string]string
		for _, n := range names {
			d, err := suite.client.AppsV1().Deployments(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if first == nil {
				first = d.Annotations
			}
			for _, k := range []string{"plimsoll.dev/phase", "plimsoll.dev/revision", "plimsoll.dev/message"} {
				if d.Annotations[k] != first[k] {
					return false, nil
				}
			}
			versions[n] = d.ResourceVersion
		}
		return true, nil
	})
	holdsFor(t, "no writes while waiting", 2*time.Second, func(context.Context) error {
		for _, n := range names {
			if d := getDeployment(t, ns, n); d.ResourceVersion != versions[n] {
				return fmt.Errorf("Deployment %s written while waiting (last by %s): %s; status %+v",
					n, lastWriter(d), d.Annotations["plimsoll.dev/message"], d.Status)
			}
		}
		return nil
	})
}

// checkMetrics reads the daemon's /metrics and checks that each of want
// (a series with its labels, a space, its value) is a line of it.
func checkMetrics(t *testing.T, d *kit.Daemon, want ...string) {
	t.Helper()
	lines := scrapeMetrics(t, d)
	for _, w := range want {
		if !slices.Contains(lines, w) {
			var near []string
			for _, l := range lines {
				if strings.HasPrefix(l, w[:strings.IndexAny(w, "{ ")]) {
					near = append(near, l)
				}
			}
			t.Errorf("/metrics has no line %q; it has:\n%s", w, strings.Join(near, "\n"))
		}
	}
}

// images returns the images of the live pods whose names start with
// prefix, one entry a pod, sorted.
func images(t *testing.T, ns, selector, prefix string) []string {
	t.Helper()
	ready, unready := podsByReadiness(t, ns, selector)
	var out []string
	for _, p := range append(ready, unready...) {
		if strings.HasPrefix(p.Name, prefix) && p.DeletionTimestamp == nil {
			out = append(out, p.Spec.Containers[0].Image)
		}
	}
	slices.Sort(out)
	return out
}

// waitForPods waits until the live pods of app (labelled app=<app>,
// named <app>-...) are n, all of them on image.
func waitForPods(t *testing.T, ns, app string, n int, image string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d %s pods on %s", n, app, image), func(context.Context) (bool, error) {
		return onlyImage(images(t, ns, "app="+app, app+"-"), n, image), nil
	})
}

// onlyImage reports whether images holds n entries, all of them image.
func onlyImage(images []string, n int, image string) bool {
	return len(images) == n && slices.Index(images, image) == 0 && images[n-1] == image
}

// TestProgressiveBadInput commits, on top of a healthy workload, a change
// of image together with a configuration error: the workload records the
// error, phase Degraded, and what runs stays as it was.
func TestProgressiveBadInput(t *testing.T) {
	cases := []struct {
		name, dir, primary, image string
		// breaks are the replacements that break the example.
		breaks []string
		// want are fragments of the workload's message and the sync status.
		want []string
	}{
		{
			name: "blue-green Service missing", dir: "blue-green", primary: "shop-blue", image: "registry.example/shop:v1",
			breaks: []string{"plimsoll.dev/active-service: shop\n", "plimsoll.dev/active-service: shop-gone\n"},
			want:   []string{"plimsoll.dev/active-service", `Service "shop-gone" does not exist`},
		},
		{
			name: "canary steps malformed", dir: "canary", primary: "api", image: "registry.example/api:v1",
			breaks: []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pauze, 100%"`},
			want:   []string{"plimsoll.dev/steps", `step 2 "pauze"`},
		},
		{
			// The colors run with the selector plus their color: a forced
			// recreation of both would take every pod down.
			name: "blue-green selector changed, forced", dir: "blue-green", primary: "shop-blue", image: "registry.example/shop:v1",
			breaks: []string{"      app: shop\n  template:", "      app: shop\n      tier: front\n  template:",
				"        app: shop\n    spec:", "        app: shop\n        tier: front\n    spec:",
				"plimsoll.dev/strategy: blue-green\n", "plimsoll.dev/strategy: blue-green\n    plimsoll.dev/force: \"true\"\n"},
			want: []string{"field spec.selector", "immutable", "under another name"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSyncTarget(t)
			good := example(t, tc.dir)
			good["config.yaml"] = settingsConfigMap("good")
			s.repo.Commit("good", good)
			kit.StartDaemon(t, s, "--interval", "1s")
			waitForDeployment(t, s.ns, tc.primary, "revision 1 Healthy", phaseIs(1, "Healthy"))
			app := "app=" + strings.SplitN(tc.primary, "-", 2)[0]
			ready, unready := podsByReadiness(t, s.ns, app)
			before := podNames(ready)
			if len(before) != 4 || len(unready) != 0 {
				t.Fatalf("pods before: %d ready %v, %d unready", len(before), before, len(unready))
			}

			newImage := strings.TrimSuffix(tc.image, "v1") + "v2"
			cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "settings", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("read ConfigMap settings: %v", err)
			}
			files := example(t, tc.dir, append([]string{tc.image, newImage}, tc.breaks...)...)
			files["config.yaml"] = settingsConfigMap("bad")
			bad := s.repo.Commit("bad", files)
			d := waitForDeployment(t, s.ns, tc.primary, "Degraded with the error", func(d *appsv1.Deployment) bool {
				return d.Annotations["plimsoll.dev/phase"] == "Degraded" && strings.Contains(d.Annotations["plimsoll.dev/message"], tc.want[0])
			})
			msg := d.Annotations["plimsoll.dev/message"]
			t.Logf("message: %s", msg)
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			waitFor(t, "the sync status to name the file", func(ctx context.Context) (bool, error) {
				st := s.status(t)
				return st["plimsoll.dev/sync-status"] == "Failed" && strings.Contains(st["plimsoll.dev/message"], "deployment.yaml") &&
					strings.Contains(st["plimsoll.dev/message"], bad[:7]), nil
			})
			holdsFor(t, "what runs staying as it was", 5*time.Second, func(ctx context.Context) error {
				ready, unready := podsByReadiness(t, s.ns, app)
				if got := podNames(ready); !slices.Equal(got, before) || len(unready) != 0 {
					return fmt.Errorf("pods now %v ready, %d unready; before %v", got, len(unready), before)
				}
				if d := getDeployment(t, s.ns, tc.primary); d.Annotations["plimsoll.dev/phase"] != "Degraded" {
					return fmt.Errorf("phase %s: %s", d.Annotations["plimsoll.dev/phase"], d.Annotations["plimsoll.dev/message"])
				}
				// Nothing of the commit is applied: the refusal comes
				// before the apply.
				now, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(ctx, "settings", metav1.GetOptions{})
				if err != nil || now.ResourceVersion != cm.ResourceVersion || now.Data["mode"] != "good" {
					return fmt.Errorf("ConfigMap settings changed: %v %v", now.Data, err)
				}
				return nil
			})
		})
	}
}

// settingsConfigMap is a ConfigMap "settings" with data mode: <mode>.
func settingsConfigMap(mode string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: " + mode + "\n"
}

// podNames returns the pods' names, sorted.
func podNames(pods []corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// scrapeMetrics returns the lines of the daemon's /metrics.
func scrapeMetrics(t *testing.T, d *kit.Daemon) []string {
	t.Helper()
	resp, err := http.Get("http://" + d.Addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(body), "\n")
}

// metricSum adds up every series of metric name on the daemon's /metrics.
func metricSum(t *testing.T, d *kit.Daemon, name string) float64 {
	t.Helper()
	var sum float64
	for _, line := range scrapeMetrics(t, d) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (!strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, " ")) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("read %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// checkResyncQuiet waits for three more syncs of the daemon, its commit
// applied, and checks that they wrote no object, recorded no Synced Event
// and logged no "applied" line. The marks are taken after one sync, so
// that the Event and log of the commit itself are in before them.
func checkResyncQuiet(t *testing.T, s *syncTarget, d *kit.Daemon) {
	t.Helper()
	waitForSyncs(t, d, 1)
	writes, events, applied := metricSum(t, d, "plimsoll_sync_object_writes_total"), syncedEvents(t, s), appliedLines(d)
	waitForSyncs(t, d, 3)
	if after := metricSum(t, d, "plimsoll_sync_object_writes_total"); after != writes {
		t.Errorf("%v objects written by syncs of an unchanged commit; metrics:\n%s", after-writes,
			strings.Join(slices.DeleteFunc(scrapeMetrics(t, d), func(l string) bool { return !strings.HasPrefix(l, "plimsoll_sync_object_writes_total") }), "\n"))
	}
	if after := syncedEvents(t, s); after != events {
		t.Errorf("%d Synced Events for syncs of an unchanged commit", after-events)
	}
	if after := appliedLines(d); after != applied {
		t.Errorf("%d \"applied\" log lines for syncs of an unchanged commit:\n%s", after-applied, d.Log())
	}
}

// waitForSyncs waits until the daemon has synced n more times.
func waitForSyncs(t *testing.T, d *kit.Daemon, n float64) {
	t.Helper()
	syncs := metricSum(t, d, "plimsoll_sync_total")
	waitFor(t, fmt.Sprintf("%v more syncs", n), func(context.Context) (bool, error) {
		return metricSum(t, d, "plimsoll_sync_total") >= syncs+n, nil
	})
}

// syncedEvents counts the Synced Events of the sync's status object, an
// aggregated Event by its count.
func syncedEvents(t *testing.T, s *syncTarget) int32 {
	t.Helper()
	list, err := suite.client.CoreV1().Events(s.statusNamespace()).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range list.Items {
		if e.Reason == "Synced" {
			n += max(e.Count, 1)
		}
	}
	return n
}

// appliedLines counts the daemon's log lines of objects applied and
// commits applied.
func appliedLines(d *kit.Daemon) int {
	log := d.Log()
	return strings.Count(log, "msg=applied ") + strings.Count(log, `msg="sync applied"`)
}

// lastWriter names the field manager of d's latest write, with its
// operation, subresource and time, as its managed fields record it.
func lastWriter(d *appsv1.Deployment) string {
	var last *metav1.ManagedFieldsEntry
	for i, m := range d.ManagedFields {
		if m.Time != nil && (last == nil || !m.Time.Before(last.Time)) {
			last = &d.ManagedFields[i]
		}
	}
	if last == nil {
		return "nobody recorded"
	}
	return fmt.Sprintf("%s %s %s at %s", last.Manager, last.Operation, last.Subresource, last.Time.Format(time.TimeOnly))
}
