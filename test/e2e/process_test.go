//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"
)

// serverProcess is a server that the suite runs beside the control plane for
// all its tests (Prometheus, the metrics adapter): a process in a group of
// its own that appends its output to a log file, dies with the test binary,
// and can be stopped and started again with the same arguments.
type serverProcess struct {
	name string // what messages call it
	bin  string
	args []string
	log  string // path of its log file

	mu   gosync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// launch starts the process and waits until ready reports true, the process
// exits, or timeout has passed; in the last two cases it is stopped again.
func (s *serverProcess) launch(timeout time.Duration, ready func(context.Context) bool) error {
	logFile, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the log of %s: %w", s.name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own group, so that a stop reaches everything it runs; and killed
	// with the test binary should that die without running the cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	if err := waitReady(s.name, done, timeout, ready); err != nil {
		_ = s.halt(timeout)
		return err
	}
	return nil
}

// waitReady polls ready until it reports true, done is closed (the process
// exited) or timeout has passed.
func waitReady(name string, done <-chan struct{}, timeout time.Duration, ready func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if ready(ctx) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before it was ready", name)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s", name, timeout)
		case <-time.After(pollInterval):
		}
	}
}

// halt stops the process group, if it runs: SIGTERM, and SIGKILL after
// timeout.
func (s *serverProcess) halt(timeout time.Duration) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
	return fmt.Errorf("%s (pid %d) did not stop on SIGTERM within %s; killed", s.name, pgid, timeout)
}

// running reports whether the process runs.
func (s *serverProcess) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// logOnFailure shows the last lines of the process's log at the end of t,
// if t has failed.
func (s *serverProcess) logOnFailure(t *testing.T, lines int) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (last %d lines of %s):\n%s", s.name, lines, s.log, s.logTail(lines))
		}
	})
}

// logTail returns the last n lines of the process's log.
func (s *serverProcess) logTail(n int) string {
	data, err := os.ReadFile(s.log)
	if errors.Is(err, os.ErrNotExist) {
		return "(no log)"
	}
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
