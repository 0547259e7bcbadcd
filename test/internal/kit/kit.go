// Package kit holds the helpers the e2e tests, the benchmarks and the
// chart and image tests share: files and the repository's root, processes
// and daemons, informers, namespaces, helm, and the manifests of bad and
// analysed input. Each is written once here, so that the suites cannot
// drift apart.
package kit

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Timings of the helpers.
const (
	// StopGrace is how long a process has to stop on SIGTERM before it is
	// killed.
	StopGrace = 15 * time.Second
	// PollInterval is how often a wait looks again.
	PollInterval = 200 * time.Millisecond
	// WaitTimeout bounds the waits of the helpers (a daemon's readiness, a
	// namespace's ServiceAccount): long enough for a loaded machine.
	WaitTimeout = 90 * time.Second
)

// Root returns the repository's root: the nearest directory above the
// test's that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("find the repository's root: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// WriteFiles puts files (slash-separated path relative to dir -> content)
// in dir, making the directories they need; an empty content removes the
// file.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if content == "" {
			if err := os.Remove(full); err != nil {
				t.Fatalf("remove %s: %v", path, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
