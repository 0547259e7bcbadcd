//go:build bench

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/test/internal/proc"
)

// daemon is a long-running process the benchmark measures: `plimsoll run`
// or a peer's controller.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	log     *os.File
	exited  chan struct{}
	waitErr error
}

// startDaemon starts bin with args, its output in logPath.
func startDaemon(t *testing.T, bin, logPath string, args ...string) *daemon {
	return startProcess(t, bin, logPath, nil, args...)
}

// startProcess starts bin with args and, beside the benchmark's own
// environment, env; its output goes to logPath.
func startProcess(t *testing.T, bin, logPath string, env []string, args ...string) *daemon {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatalf("create the log directory of %s: %v", filepath.Base(bin), err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create the log of %s: %v", filepath.Base(bin), err)
	}
	d := &daemon{name: filepath.Base(bin), cmd: exec.Command(bin, args...), log: f, exited: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = f, f
	// Should the benchmark crash, the process goes with it rather than
	// run on against the control plane.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if env != nil {
		d.cmd.Env = append(os.Environ(), env...)
	}
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Logf("%s started (pid %d), log %s", d.name, d.cmd.Process.Pid, logPath)
	return d
}

// failIfExited fails the test when the process is no longer running.
func (d *daemon) failIfExited(t *testing.T) {
	select {
	case <-d.exited:
		out, _ := os.ReadFile(d.log.Name())
		t.Fatalf("%s exited: %v\n%s", d.name, d.waitErr, tail(string(out)))
	default:
	}
}

// stop sends SIGTERM, then SIGKILL after stopGrace, and waits for the exit.
func (d *daemon) stop(t *testing.T) {
	defer d.log.Close()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(stopGrace):
		t.Logf("%s did not stop on SIGTERM within %s; killing it", d.name, stopGrace)
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

// procGroup is the processes of one controller, measured as one: plimsoll's
// daemon or Argo Rollouts' controller alone, Flux's source-controller and
// kustomize-controller together.
type procGroup []*daemon

// started is when the first of the processes started.
func (g procGroup) started() time.Time {
	at := g[0].started
	for _, d := range g[1:] {
		if d.started.Before(at) {
			at = d.started
		}
	}
	return at
}

// failIfExited fails the test when any of the processes exited.
func (g procGroup) failIfExited(t *testing.T) {
	for _, d := range g {
		d.failIfExited(t)
	}
}

// stop stops every process, the last started first.
func (g procGroup) stop(t *testing.T) {
	for i := len(g) - 1; i >= 0; i-- {
		g[i].stop(t)
	}
}

// cpu is the user and system CPU seconds the processes have used.
func (g procGroup) cpu() (float64, error) {
	var sum float64
	for _, d := range g {
		s, err := procCPU(d.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// memory is the sum of the processes' peak RSS (an upper bound of their
// peak together, which may have come at different moments) and of their
// RSS now, in KiB.
func (g procGroup) memory() (peak, rss int64, err error) {
	for _, d := range g {
		p, err := proc.PeakRSS(d.cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		r, err := proc.RSS(d.cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		peak, rss = peak+p, rss+r
	}
	return peak, rss, nil
}

// resetPeakRSS sets each process's peak RSS back to its RSS now.
func (g procGroup) resetPeakRSS() error {
	for _, d := range g {
		if err := resetPeakRSS(d.cmd.Process.Pid); err != nil {
			return err
		}
	}
	return nil
}
