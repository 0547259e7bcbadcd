package kit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Process is what to start: a binary with its arguments, the environment
// beside the test's own, and where its output goes.
type Process struct {
	Bin  string
	Args []string
	// Env is added to the test's environment.
	Env []string
	// Log is the file its output goes to; empty keeps it in memory, and
	// prints it when the test fails.
	Log string
}

// Daemon is a process a test started. It is stopped when the test ends,
// if it was not stopped before.
type Daemon struct {
	// Name is the binary's base name.
	Name string
	Cmd  *exec.Cmd
	// Addr is the loopback address it serves on; "" when none was given.
	Addr string
	// Started is when it started.
	Started time.Time

	exited  chan struct{}
	waitErr error
	file    *os.File

	mu   sync.Mutex
	logs bytes.Buffer
}

// Write collects the daemon's output when it is kept in memory.
func (d *Daemon) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.Write(p)
}

// Log returns the daemon's output so far.
func (d *Daemon) Log() string {
	if d.file != nil {
		out, _ := os.ReadFile(d.file.Name())
		return string(out)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.String()
}

// Start starts p. Should the test's process die, the daemon is killed
// with it rather than run on against the cluster.
func Start(t testing.TB, p Process) *Daemon {
	t.Helper()
	d := &Daemon{Name: filepath.Base(p.Bin), Cmd: exec.Command(p.Bin, p.Args...), exited: make(chan struct{})}
	var out io.Writer = d
	if p.Log != "" {
		if err := os.MkdirAll(filepath.Dir(p.Log), 0o755); err != nil {
			t.Fatalf("create the log directory of %s: %v", d.Name, err)
		}
		f, err := os.Create(p.Log)
		if err != nil {
			t.Fatalf("create the log of %s: %v", d.Name, err)
		}
		d.file, out = f, f
	}
	d.Cmd.Stdout, d.Cmd.Stderr = out, out
	d.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.Env != nil {
		d.Cmd.Env = append(os.Environ(), p.Env...)
	}
	d.Started = time.Now()
	if err := d.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.Bin, err)
	}
	go func() {
		d.waitErr = d.Cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.Stop(t)
		if t.Failed() && d.file == nil {
			t.Logf("%s's log:\n%s", d.Name, d.Log())
		}
	})
	return d
}

// Exited is closed once the daemon has exited.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// Wait waits until the daemon has exited and returns how it ended, as
// exec.Cmd.Wait does; only Wait may be used for that, since the daemon is
// waited for from the start.
func (d *Daemon) Wait() error {
	<-d.exited
	return d.waitErr
}

// FailIfExited fails the test when the daemon is no longer running.
func (d *Daemon) FailIfExited(t testing.TB) {
	t.Helper()
	select {
	case <-d.exited:
		t.Fatalf("%s exited: %v\n%s", d.Name, d.waitErr, tail(d.Log()))
	default:
	}
}

// Kill kills the daemon with SIGKILL, as a crash or an evicted node
// would, and waits for it to exit.
func (d *Daemon) Kill(t testing.TB) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
}

// Stop sends SIGTERM, then SIGKILL after StopGrace, and waits for the
// exit; it returns at once for a daemon that has exited.
func (d *Daemon) Stop(t testing.TB) {
	defer func() {
		if d.file != nil {
			d.file.Close()
		}
	}()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(StopGrace):
		t.Logf("%s did not stop on SIGTERM within %s; killing it", d.Name, StopGrace)
		_ = d.Cmd.Process.Kill()
		<-d.exited
	}
}

// tail is the end of a long log.
func tail(s string) string {
	const keep = 4000
	if len(s) > keep {
		return "..." + s[len(s)-keep:]
	}
	return s
}

// A Target is something a plimsoll daemon syncs.
type Target interface {
	// RunFlags returns the plimsoll binary and the flags of `plimsoll run`
	// for the target, with extra added.
	RunFlags(extra ...string) (bin string, flags []string)
}

// StartDaemon runs `plimsoll run` for target with extra flags, serving on
// a free loopback port, and waits until it answers /readyz with 200. It is
// stopped with SIGTERM when the test ends, and its log printed if the test
// failed.
func StartDaemon(t testing.TB, target Target, extra ...string) *Daemon {
	t.Helper()
	d := LaunchDaemon(t, target, extra...)
	d.WaitReady(t)
	return d
}

// LaunchDaemon starts `plimsoll run` like StartDaemon without waiting for
// it to be ready.
func LaunchDaemon(t testing.TB, target Target, extra ...string) *Daemon {
	t.Helper()
	addr := FreeAddr(t)
	bin, flags := target.RunFlags(extra...)
	d := Start(t, Process{Bin: bin, Args: append([]string{"run", "--listen", addr}, flags...)})
	d.Addr = addr
	return d
}

// FreeAddr returns a loopback address no one listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Ready reports whether the daemon answers /readyz with 200.
func (d *Daemon) Ready() bool {
	resp, err := http.Get("http://" + d.Addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until the daemon answers /readyz with 200.
func (d *Daemon) WaitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, PollInterval, true, func(context.Context) (bool, error) {
		select {
		case <-d.exited:
			return false, fmt.Errorf("%s exited: %v", d.Name, d.waitErr)
		default:
		}
		return d.Ready(), nil
	})
	if err != nil {
		t.Fatalf("wait for %s to be ready at %s: %v", d.Name, d.Addr, err)
	}
}
