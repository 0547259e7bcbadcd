package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestSourceConfigReadsCredentials(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PLIMSOLL_TEST_PASSWORD", "pw-456")
	tests := []struct {
		name         string
		opts         sourceOptions
		wantUser     string
		wantPassword string
		wantErr      string
	}{
		{name: "password from the environment", opts: sourceOptions{repo: "https://git.example/r.git", gitUsername: "deploy", gitPasswordEnv: "PLIMSOLL_TEST_PASSWORD"},
			wantUser: "deploy", wantPassword: "pw-456"},
		{name: "token from a file, trimmed", opts: sourceOptions{repo: "https://git.example/r.git", gitTokenFile: tokenFile},
			wantPassword: "tok-123"},
		{name: "a token wins over a password", opts: sourceOptions{repo: "https://git.example/r.git", gitPasswordEnv: "PLIMSOLL_TEST_PASSWORD", gitTokenFile: tokenFile},
			wantPassword: "tok-123"},
		{name: "no repository", opts: sourceOptions{}, wantErr: "--repo is required"},
		{name: "unset environment variable", opts: sourceOptions{repo: "x", gitTokenEnv: "PLIMSOLL_TEST_UNSET"},
			wantErr: "read Git token: environment variable PLIMSOLL_TEST_UNSET is not set"},
		{name: "file and environment both", opts: sourceOptions{repo: "x", gitPasswordFile: tokenFile, gitPasswordEnv: "PLIMSOLL_TEST_PASSWORD"},
			wantErr: "Git password: give a file or an environment variable, not both"},
		{name: "missing known_hosts file", opts: sourceOptions{repo: "x", sshKnownHostsFile: filepath.Join(dir, "nope")},
			wantErr: "read --ssh-known-hosts-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.opts.sourceConfig()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("sourceConfig() error = %v, want it to contain %q", err, tt.wantErr)
				}
				for _, secret := range []string{"tok-123", "pw-456"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q repeats a secret", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("sourceConfig(): %v", err)
			}
			if cfg.Auth.Username != tt.wantUser || cfg.Auth.Password != tt.wantPassword {
				t.Errorf("auth user %q password %q, want %q and %q", cfg.Auth.Username, cfg.Auth.Password, tt.wantUser, tt.wantPassword)
			}
		})
	}
}

func TestParseWatchNamespaces(t *testing.T) {
	tests := []struct {
		name    string
		flags   []string
		want    string
		wantErr string
	}{
		{name: "unset: every namespace", flags: nil, want: ""},
		{name: "repeated and comma-separated, each once", flags: []string{"--watch-namespace=web,apps", "--watch-namespace", "web"}, want: "web apps"},
		{name: "not a namespace name", flags: []string{"--watch-namespace=Web_1"}, wantErr: `--watch-namespace "Web_1" is not a namespace name`},
		{name: "empty entry", flags: []string{"--watch-namespace=web,"}, wantErr: `--watch-namespace "" is not a namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o sourceOptions
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tt.flags); err != nil {
				t.Fatalf("parse %v: %v", tt.flags, err)
			}
			got, err := o.parseWatchNamespaces()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
