package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotifyOptions: receivers come from files, one URL each, named
// after the file; a bad file is refused naming the flag and the file,
// never the URL.
func TestNotifyOptions(t *testing.T) {
	const token = "xoxb-4f1d9c2e"
	dir := t.TempDir()
	write := func(name, content string) string {
		file := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	good := write("a/team", "https://hooks.slack.example/services/"+token+"\n")
	also := write("b/team", "https://hooks.slack.example/services/"+token+"\n")
	ops := write("ops", "https://ops.example/hook?token="+token)
	empty := write("empty", "\n")
	for _, tc := range []struct {
		name      string
		opts      notifyOptions
		receivers bool
		wantErr   string
	}{
		{name: "none", opts: notifyOptions{timeout: time.Second}},
		{name: "one of each", opts: notifyOptions{slackFiles: []string{good}, webhookFiles: []string{ops}, timeout: time.Second}, receivers: true},
		{name: "one name for two kinds", opts: notifyOptions{slackFiles: []string{good}, webhookFiles: []string{also}, timeout: time.Second}, receivers: true},
		{name: "empty file", opts: notifyOptions{webhookFiles: []string{empty}, timeout: time.Second},
			wantErr: "--notify-webhook-file: read the webhook receiver's URL from " + empty + ": it is empty"},
		{name: "missing file", opts: notifyOptions{slackFiles: []string{filepath.Join(dir, "nope")}, timeout: time.Second},
			wantErr: "--notify-slack-file: read the slack receiver's URL"},
		{name: "two files of one name", opts: notifyOptions{slackFiles: []string{good, also}, timeout: time.Second},
			wantErr: `two slack receivers are named "slack/team"`},
		{name: "no timeout", opts: notifyOptions{slackFiles: []string{good}}, wantErr: "--notify-timeout 0s: want a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.opts.dispatcher(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
			defer stopNotifying(d)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), token) {
					t.Fatalf("error %v, want %q and no URL", err, tc.wantErr)
				}
				return
			}
			if err != nil || (d != nil) != tc.receivers {
				t.Fatalf("dispatcher %v, %v; want receivers: %v", d, err, tc.receivers)
			}
		})
	}
}
