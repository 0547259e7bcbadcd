//go:build bench

package bench

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// writeSection replaces the section called name in the markdown file path
// with body, or appends it when the file has none, so that each benchmark
// rewrites its own part of bench/results.md and leaves the others alone.
// A section runs from the line "<!-- begin NAME -->" to the line
// "<!-- end NAME -->"; the markers render as nothing.
func writeSection(t *testing.T, path, name, body string) {
	t.Helper()
	begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->\n"
	section := begin + strings.TrimSpace(body) + "\n" + end
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read %s: %v", path, err)
	}
	text := string(old)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	switch {
	case i >= 0 && j > i:
		text = text[:i] + section + text[j+len(end):]
	case strings.TrimSpace(text) == "":
		text = section
	default:
		text = strings.TrimRight(text, "\n") + "\n\n" + section
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}
