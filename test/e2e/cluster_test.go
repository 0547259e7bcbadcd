//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// clusterComponents are the processes hack/cluster starts, by pid file name.
var clusterComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// TestClusterLifecycle brings up a second, private control plane (its own
// state directory and ports) and checks that `up` is idempotent and that
// `down` leaves no process of it behind.
func TestClusterLifecycle(t *testing.T) {
	dir := t.TempDir()
	env := append(os.Environ(),
		"PLIMSOLL_CLUSTER_DIR="+dir,
		"PLIMSOLL_CLUSTER_PORT_BASE=26460",
		"PLIMSOLL_CLUSTER_NODES=1",
	)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(clusterScript(), args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Cleanup(func() {
		if out, err := run("down"); err != nil {
			t.Logf("hack/cluster down: %v\n%s", err, out)
		}
	})

	if out, err := run("up"); err != nil {
		t.Fatalf("hack/cluster up: %v\n%s", err, out)
	}
	first := componentPids(t, dir)

	out, err := run("up")
	if err != nil {
		t.Fatalf("second hack/cluster up: %v\n%s", err, out)
	}
	for _, name := range clusterComponents {
		if !strings.Contains(out, name+" already running") {
			t.Errorf("second up did not report %s as already running:\n%s", name, out)
		}
	}
	second := componentPids(t, dir)
	for name, pid := range first {
		if second[name] != pid {
			t.Errorf("second up replaced %s: pid %d, then %d", name, pid, second[name])
		}
	}
	if out, err := run("status"); err != nil || !strings.Contains(out, "plimsoll-node-0   Ready") {
		t.Fatalf("hack/cluster status after up: %v, want exit 0 and node plimsoll-node-0 Ready:\n%s", err, out)
	}

	if out, err := run("down"); err != nil {
		t.Fatalf("hack/cluster down: %v\n%s", err, out)
	}
	for name, pid := range first {
		if processAlive(pid) {
			t.Errorf("%s (pid %d) still runs after down", name, pid)
		}
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes still mention the cluster directory after down: %v", pids)
	}
	out, err = run("status")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("hack/cluster status after down: %v, want a non-zero exit\n%s", err, out)
	}
	if out, err := run("down"); err != nil || !strings.Contains(out, "nothing was running") {
		t.Errorf("second hack/cluster down: %v, want success and %q:\n%s", err, "nothing was running", out)
	}
}

// componentPids reads the pid file of every component; each must be alive.
func componentPids(t *testing.T, dir string) map[string]int {
	t.Helper()
	pids := make(map[string]int)
	for _, name := range clusterComponents {
		raw, err := os.ReadFile(filepath.Join(dir, "run", name+".pid"))
		if err != nil {
			t.Fatalf("read pid file of %s: %v", name, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatalf("parse pid file of %s: %v", name, err)
		}
		if !processAlive(pid) {
			t.Fatalf("%s (pid %d) is not running", name, pid)
		}
		pids[name] = pid
	}
	return pids
}

// processAlive reports whether pid names a live process (zombies count as
// gone: they have exited and only wait to be reaped).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// /proc/PID/stat is "pid (comm) state ...": the state follows the last ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// processesMentioning returns the pids of processes whose command line
// contains s.
func processesMentioning(t *testing.T, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
