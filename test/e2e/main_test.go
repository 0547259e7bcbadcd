//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Suite-wide settings.
const (
	// pollInterval is how often wait helpers look at the cluster.
	pollInterval = 200 * time.Millisecond
	// defaultTimeout bounds every wait for the cluster to converge.
	defaultTimeout = 90 * time.Second
	// keepClusterEnv, set to 1, leaves a cluster the suite started running.
	keepClusterEnv = "PLIMSOLL_KEEP_CLUSTER"
	// serialEnv, set to 1, runs every test on its own (see parallel).
	serialEnv = "PLIMSOLL_E2E_SERIAL"
)

// suite is what every test shares: the repository root and a client for the
// local control plane. It is set once by TestMain, before any test runs.
var suite struct {
	root       string
	kubeconfig string
	kubectl    string
	plimsoll   string
	client     kubernetes.Interface
	dynamic    dynamic.Interface
}

// suiteCleanups run after the last test, the last added first: they stop
// what the suite starts once for all tests (the Prometheus of
// startPrometheus, the metrics adapter of startMetricsAdapter).
var suiteCleanups []func()

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: find repository root:", err)
		return 1
	}
	suite.root = root
	suite.kubeconfig = filepath.Join(root, ".cluster", "kubeconfig")
	suite.kubectl = filepath.Join(root, ".cluster", "bin", "kubectl")

	started := false
	if err := exec.Command(clusterScript(), "status").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: no local control plane running; starting one")
		up := exec.Command(clusterScript(), "up")
		up.Stdout, up.Stderr = os.Stderr, os.Stderr
		if err := up.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: start the local control plane:", err)
			return 1
		}
		started = true
	}
	if started && os.Getenv(keepClusterEnv) != "1" {
		defer func() {
			down := exec.Command(clusterScript(), "down")
			down.Stdout, down.Stderr = os.Stderr, os.Stderr
			if err := down.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: stop the local control plane:", err)
			}
		}()
	}

	binDir, err := os.MkdirTemp("", "plimsoll-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: make bin dir:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	suite.plimsoll = filepath.Join(binDir, "plimsoll")
	build := exec.Command("go", "build", "-o", suite.plimsoll, "./cmd/plimsoll")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build plimsoll: %v\n%s", err, out)
		return 1
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: load kubeconfig:", err)
		return 1
	}
	cfg.QPS, cfg.Burst = 100, 200
	suite.client, err = kubernetes.NewForConfig(cfg)
	if err == nil {
		suite.dynamic, err = dynamic.NewForConfig(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build client:", err)
		return 1
	}
	code := m.Run()
	for i := len(suiteCleanups) - 1; i >= 0; i-- {
		suiteCleanups[i]()
	}
	return code
}

func clusterScript() string { return filepath.Join(suite.root, "hack", "cluster") }

// clusterTool returns the path of a tool that `hack/cluster NAME` builds
// once and caches (prometheus, prometheus-adapter), building it if needed;
// the build's progress goes to stderr.
func clusterTool(name string) (string, error) {
	build := exec.Command(clusterScript(), name)
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		return "", fmt.Errorf("build %s with hack/cluster: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// waitFor polls cond until it reports true, failing the test after
// defaultTimeout. describe says what was awaited, for the failure message.
func waitFor(t *testing.T, describe string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	waitForWithin(t, describe, defaultTimeout, cond)
}

// waitForWithin is waitFor with a timeout of its own.
func waitForWithin(t *testing.T, describe string, timeout time.Duration, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("wait for %s: %v (last error: %v)", describe, err, lastErr)
	}
}

// holdsFor checks that cond stays true for the whole of d, polling; it fails
// the test on the first poll where it does not. It is used to show that a
// state is stable (a stalled rollout stays stalled), not to time anything.
func holdsFor(t *testing.T, describe string, d time.Duration, cond func(ctx context.Context) error) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(ctx); err != nil {
			t.Fatalf("%s no longer holds: %v", describe, err)
		}
		time.Sleep(pollInterval)
	}
}

// kubectl runs the kubectl built by hack/cluster against the local control
// plane and returns its combined output, failing the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runKubectl("", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runKubectl is kubectl for code that has no test to fail: it runs kubectl
// with stdin as its standard input and returns its combined output, or an
// error that carries it.
func runKubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(suite.kubectl, append([]string{"--kubeconfig", suite.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// parallel lets test t run beside the other parallel tests. Go runs those
// only once every serial test has ended, so none of them overlaps a test
// that stops a shared part (the API server outage, the Prometheus restarts
// of the analysis scenarios). A parallel test has its own namespace and
// daemon and changes nothing the others read; most of its time is spent
// waiting for pods, pauses and polls, which is what running them together
// saves. PLIMSOLL_E2E_SERIAL=1 runs every test on its own.
func parallel(t *testing.T) {
	if os.Getenv(serialEnv) != "1" {
		t.Parallel()
	}
}
