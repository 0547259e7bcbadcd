package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	info := buildInfo{Version: "v1.2.3", Commit: "0123abc", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	tests := []struct {
		name    string
		format  string
		want    string
		wantErr string
	}{
		{name: "text", format: "text", want: "plimsoll v1.2.3 (commit 0123abc, go1.26.8, linux/amd64)\n"},
		{name: "json", format: "json", want: `{
  "version": "v1.2.3",
  "commit": "0123abc",
  "goVersion": "go1.26.8",
  "platform": "linux/amd64"
}
`},
		{name: "unknown format", format: "yaml", wantErr: `unknown output format "yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := printVersion(&out, tt.format, info)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("printVersion(%q) error = %v, want it to contain %q", tt.format, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("printVersion(%q): %v", tt.format, err)
			}
			if out.String() != tt.want {
				t.Errorf("printVersion(%q) = %q, want %q", tt.format, out.String(), tt.want)
			}
		})
	}
}

// TestVersionCommandReportsStampedBuild runs the cobra command the way a user
// does and checks that the values the Makefile stamps reach the output.
func TestVersionCommandReportsStampedBuild(t *testing.T) {
	oldVersion, oldCommit := version, commit
	version, commit = "v9.9.9", "feedface"
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })

	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version", "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("plimsoll version: %v", err)
	}
	var got buildInfo
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("decode %q: %v", out.String(), err)
	}
	if got.Version != "v9.9.9" || got.Commit != "feedface" {
		t.Errorf("version output = %+v, want version v9.9.9 and commit feedface", got)
	}
}
