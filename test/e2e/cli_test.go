//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// cliFlags are the connection flags of the CLI commands for s.
func (s *syncTarget) cliFlags() []string {
	return []string{"--kubeconfig", suite.kubeconfig, "-n", s.ns}
}

// inDir puts files under dir/.
func inDir(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for name, text := range files {
		out[dir+"/"+name] = text
	}
	return out
}

// TestCLI runs the CLI against a rolling and a canary workload: status as
// JSON matches the annotations and the sync's ConfigMap, and as a table
// names them; promote moves the canary on and says so; commands that do
// not apply, a missing workload and an unreachable cluster are one line
// and a non-zero exit.
func TestCLI(t *testing.T) {
	s := newSyncTarget(t)
	files := inDir("web", example(t, "rolling"))
	for name, text := range inDir("api", example(t, "canary")) {
		files[name] = text
	}
	first := s.repo.Commit("web and api", files)
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
	s.waitForCommit(t, first)

	t.Log("status -o json matches the annotations")
	out, code := runPlimsoll(t, append([]string{"status", "-o", "json", "--sync-name", s.ns}, s.cliFlags()...)...)
	if code != 0 {
		t.Fatalf("status exited %d:\n%s", code, out)
	}
	var report struct {
		Workloads []struct {
			Name, Strategy, Primary, Phase, Commit, Message string
			Revision                                        int64
		}
		Syncs []struct{ Name, Namespace, Status, Commit string }
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, out)
	}
	if len(report.Workloads) != 2 {
		t.Fatalf("status lists %d workloads, want 2:\n%s", len(report.Workloads), out)
	}
	for _, w := range report.Workloads {
		d := getDeployment(t, s.ns, w.Name)
		a := d.Annotations
		wantStrategy := map[string]string{"web": "rolling", "api": "canary"}[w.Name]
		if w.Strategy != wantStrategy || w.Primary != w.Name || w.Phase != a["plimsoll.dev/phase"] || w.Commit != a["plimsoll.dev/commit"] ||
			w.Message != a["plimsoll.dev/message"] || w.Revision != 1 {
			t.Errorf("status of %s: %+v; annotations %v, strategy %s", w.Name, w, a, wantStrategy)
		}
	}
	if len(report.Syncs) != 1 || report.Syncs[0].Name != s.ns || report.Syncs[0].Status != "Synced" || report.Syncs[0].Commit != first {
		t.Errorf("syncs in status: %+v, want %s Synced at %s", report.Syncs, s.ns, first)
	}
	table, code := runPlimsoll(t, append([]string{"status", "--sync-name", s.ns}, s.cliFlags()...)...)
	t.Logf("plimsoll status:\n%s", table)
	for _, want := range []string{"WORKLOAD", "api", "canary", "web", "rolling", "Healthy", first[:7], "Synced"} {
		if code != 0 || !strings.Contains(table, want) {
			t.Errorf("status table (exit %d) does not show %q", code, want)
		}
	}

	t.Log("status finds every sync by its label, whatever its name; -A reads every namespace")
	other := newSyncTarget(t)
	other.repo.Commit("web", inDir("web", example(t, "rolling")))
	other.mustSync(t)
	table, code = runPlimsoll(t, append([]string{"status"}, s.cliFlags()...)...)
	if code != 0 || !strings.Contains(table, s.ns+"  ") || strings.Contains(table, other.ns) {
		t.Errorf("status of %s (exit %d) must list its sync %s and nothing of %s:\n%s", s.ns, code, s.ns, other.ns, table)
	}
	everywhere, code := runPlimsoll(t, "status", "-A", "--kubeconfig", suite.kubeconfig)
	t.Logf("plimsoll status -A:\n%s", everywhere)
	for _, want := range []string{"NAMESPACE", s.ns, other.ns} {
		if code != 0 || !strings.Contains(everywhere, want) {
			t.Errorf("status -A (exit %d) does not show %q", code, want)
		}
	}
	out, code = runPlimsoll(t, "status", "-A", "-o", "json", "--kubeconfig", suite.kubeconfig)
	var all struct {
		Workloads []struct{ Namespace, Name string }
		Syncs     []struct{ Namespace, Name, Status string }
	}
	if err := json.Unmarshal([]byte(out), &all); code != 0 || err != nil {
		t.Fatalf("status -A -o json exited %d: %v\n%s", code, err, out)
	}
	found := map[string]bool{}
	for _, sy := range all.Syncs {
		found[sy.Namespace+"/"+sy.Name+" "+sy.Status] = true
	}
	for _, ns := range []string{s.ns, other.ns} {
		if !found[ns+"/"+ns+" Synced"] {
			t.Errorf("status -A -o json lacks sync %s/%s Synced: %+v", ns, ns, all.Syncs)
		}
	}

	t.Log("promote moves the canary on and says what the controller did")
	s.repo.Commit("api v2", mergeFiles(files, inDir("api", canaryExample(t, "v2"))))
	waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote", phaseIs(2, "Paused", "canary step 2/5"))
	out, code = runPlimsoll(t, append([]string{"promote", "api"}, s.cliFlags()...)...)
	if code != 0 || !strings.Contains(out, "api: promote: moved on from step 2/5") {
		t.Errorf("promote api exited %d: %q", code, out)
	}
	waitForDeployment(t, s.ns, "api", "step 4/5", phaseIs(2, "Paused", "canary step 4/5"))

	t.Log("what does not apply is one line and a non-zero exit")
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	kc, err := os.ReadFile(suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unreachable, []byte(replaceServer(string(kc), "https://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"abort", "web"}, s.cliFlags()...), "abort applies to blue-green and canary workloads; web is rolling"},
		{append([]string{"retry", "api"}, s.cliFlags()...), "nothing to retry: api has no failed revision"},
		{append([]string{"resume", "web"}, s.cliFlags()...), "nothing to resume: web is Healthy, not Paused"},
		{append([]string{"promote", "shop"}, s.cliFlags()...), `no Deployment, StatefulSet or DaemonSet of workload "shop" in namespace ` + s.ns},
		{[]string{"status", "--kubeconfig", unreachable}, "cannot reach the cluster at https://127.0.0.1:1"},
		{append([]string{"status", "-o", "yaml"}, s.cliFlags()...), `unknown output "yaml"`},
	} {
		out, code := runPlimsoll(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code == 0 || len(lines) != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("plimsoll %s: exit %d, output %q; want one line with %q and a non-zero exit", strings.Join(tc.args[:2], " "), code, out, tc.want)
		}
	}
}

// mergeFiles returns base with the files of each over written over it,
// in order.
func mergeFiles(base map[string]string, over ...map[string]string) map[string]string {
	out := maps.Clone(base)
	for _, o := range over {
		maps.Copy(out, o)
	}
	return out
}

// replaceServer points every cluster of a kubeconfig at server.
func replaceServer(kubeconfig, server string) string {
	var lines []string
	for _, line := range strings.Split(kubeconfig, "\n") {
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "server:") {
			line = line[:strings.Index(line, "server:")] + "server: " + server
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestCLITrace traces a blue-green rollout with --until-done into a pipe:
// one line per change, from revision 2 waiting for promote to revision 2
// Healthy, and exit 0 once it is. Auto-promote is off, so that the rollout
// waits for the trace to be running: the trace's first line is read
// before the promote goes out.
func TestCLITrace(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", manualBlueGreen(t, "v1"))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	s.repo.Commit("shop v2", manualBlueGreen(t, "v2"))
	waitForDeployment(t, s.ns, "shop-blue", "revision 2 waiting for promote", phaseIs(2, "Paused", "waiting for promote"))

	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.plimsoll, append([]string{"trace", "shop", "--until-done"}, s.cliFlags()...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start trace --until-done: %v", err)
	}
	read := bufio.NewReader(stdout)
	first, err := read.ReadString('\n')
	if err != nil {
		t.Fatalf("trace --until-done printed no line: %v\n%s", err, stderr.String())
	}
	command(t, s.ns, "shop-blue", "promote")
	rest, err := io.ReadAll(read)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(first), rest...)
	t.Logf("plimsoll trace --until-done:\n%s", out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("trace --until-done: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 {
		t.Fatalf("trace printed %d lines, want one per change of a whole rollout", len(lines))
	}
	for i := 1; i < len(lines); i++ {
		if strings.SplitN(lines[i], " ", 2)[1] == strings.SplitN(lines[i-1], " ", 2)[1] {
			t.Errorf("lines %d and %d are the same view: %q", i, i+1, lines[i])
		}
	}
	if !strings.Contains(lines[0], "revision 2 Paused") {
		t.Errorf("first line %q, want revision 2 Paused, waiting for promote", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "revision 2 Healthy") || !strings.Contains(last, "Service shop 4 ready") {
		t.Errorf("last line %q, want revision 2 Healthy with 4 ready endpoints", last)
	}
	if !strings.Contains(string(out), "(4 shop-blue, 4 shop-green)") && !strings.Contains(string(out), "shop-green 4/4") {
		t.Errorf("no line shows green coming up")
	}
}

// TestCLIDiff: with the cluster in sync, diff prints nothing and exits 0;
// after a commit the daemon has not applied (it is stopped), diff shows the
// changed image of a rolling, a blue-green and a canary workload, the
// fields Git dropped from the rolling and the canary one as the rollout
// controller's write drops them (and none of the status it keeps as
// removed), a changed ConfigMap and the one a prune would delete, exits 1,
// and changes nothing.
func TestCLIDiff(t *testing.T) {
	s := newSyncTarget(t)
	minReady := []string{"  replicas: 4\n", "  replicas: 4\n  minReadySeconds: 1\n"}
	files := mergeFiles(inDir("web", example(t, "rolling", minReady...)), inDir("shop", blueGreenExample(t, "v1", "2s")),
		inDir("api", canaryExample(t, "v1")))
	files["config/settings.yaml"] = settingsConfigMap("one")
	files["config/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n"
	first := s.repo.Commit("v1", files)
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	s.waitForCommit(t, first)

	out, code := runPlimsoll(t, append([]string{"diff"}, s.flags()...)...)
	if code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("diff of a synced cluster: exit %d, output:\n%s", code, out)
	}

	if err := d.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
	files = mergeFiles(inDir("web", switchedExample(t, "v2", "")), inDir("shop", blueGreenExample(t, "v2", "2s")),
		inDir("api", canaryExample(t, "v2", "  progressDeadlineSeconds: 60\n", "")))
	files["config/settings.yaml"] = settingsConfigMap("two")
	files["config/extra.yaml"] = ""
	s.repo.Commit("v2", files)
	// The Deployment controller may still write web's status (a generation
	// observed late); a write of the diff's would move its generation.
	before := getDeployment(t, s.ns, "web").Generation

	out, code = runPlimsoll(t, append([]string{"diff"}, s.flags()...)...)
	t.Logf("plimsoll diff (exit %d):\n%s", code, out)
	if code != 1 {
		t.Errorf("diff with changes exited %d, want 1", code)
	}
	for _, want := range []string{
		"--- a/apps/Deployment " + s.ns + "/web", "-      - image: registry.example/web:v1", "+      - image: registry.example/web:v2",
		"-  minReadySeconds: 1",
		"--- a/apps/Deployment " + s.ns + "/api", "+      - image: registry.example/api:v2",
		"-  progressDeadlineSeconds: 60", "+  progressDeadlineSeconds: 600",
		"--- a/apps/Deployment " + s.ns + "/shop", "+      - image: registry.example/shop:v2",
		"-  mode: one", "+  mode: two",
		"--- a/ConfigMap " + s.ns + "/extra", "-  k: v",
		"5 objects would change",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff does not show %q", want)
		}
	}
	for _, section := range strings.Split(out, "--- a/")[1:] {
		if strings.HasPrefix(section, "apps/Deployment") && strings.Contains(section, "\n-    plimsoll.dev/") {
			t.Errorf("diff shows a label or status annotation of the rollout controller as removed:\n%s", section)
		}
	}
	if after := getDeployment(t, s.ns, "web").Generation; after != before {
		t.Errorf("diff changed Deployment web: generation %d -> %d", before, after)
	}
	if _, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "extra", metav1.GetOptions{}); err != nil {
		t.Errorf("diff pruned ConfigMap extra: %v", err)
	}
}
