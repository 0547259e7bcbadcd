// Package proc measures the processes the e2e tests and the benchmarks
// start, and makes the large files they feed them: what both suites need
// and neither may import from the other, since each is a build-tagged
// package of its own.
package proc

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PeakRSS returns the peak resident set size of process pid in KiB
// (VmHWM in /proc/<pid>/status), since it started or since its peak was
// last reset.
func PeakRSS(pid int) (int64, error) { return statusKiB(pid, "VmHWM") }

// RSS returns the resident set size of process pid in KiB now (VmRSS in
// /proc/<pid>/status).
func RSS(pid int) (int64, error) { return statusKiB(pid, "VmRSS") }

// statusKiB reads the line key of /proc/<pid>/status, a size in kB.
func statusKiB(pid int, key string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read %s of process %d: %w", key, pid, err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read %s of process %d: bad line %q", key, pid, line)
			}
			return kib, nil
		}
	}
	return 0, fmt.Errorf("read %s of process %d: no such line", key, pid)
}

// RunPeak starts cmd, reads its peak RSS every poll while it runs, and
// returns the highest reading in KiB with cmd.Wait's error. The peak is
// read from /proc because a child's rusage will not do: Go starts a child
// with vfork, and exec folds the parent's high-water mark into the
// child's, so a test or benchmark holding a 200 MB blob would swamp it.
func RunPeak(cmd *exec.Cmd, poll time.Duration) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if kib, err := PeakRSS(cmd.Process.Pid); err == nil {
			peak = max(peak, kib)
		}
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
		}
	}
}

// WriteRandom writes size incompressible bytes to path, streaming, making
// its directory.
func WriteRandom(path string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
