package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
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

// TestSourceConfigReadsVerificationKeys: --verify-key and --verify-ssh-key
// are read at startup, and an unreadable or malformed file is an error
// naming the flag and the file.
func TestSourceConfigReadsVerificationKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const keyring, signers = "testdata/keys.asc", "testdata/allowed_signers"
	raw, err := os.ReadFile(signers)
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`ssh-ed25519 \S+`).FindString(string(raw))
	missing := filepath.Join(dir, "nope")
	notArmored := write("key.gpg", "mQINBGX...")
	badSigners := write("bad_signers", "# team\nalice@example.com cert-authority "+key+"\n")
	pasted := write("authorized_keys", key+" alice@laptop\n")
	empty := write("empty_signers", "# nobody yet\n")

	for _, tc := range []struct {
		name             string
		opts             sourceOptions
		wantPGP, wantSSH bool
		wantErr          string
	}{
		{name: "OpenPGP keys", opts: sourceOptions{repo: "x", verifyKeyFile: keyring}, wantPGP: true},
		{name: "allowed signers", opts: sourceOptions{repo: "x", verifySSHKeyFile: signers}, wantSSH: true},
		{name: "both", opts: sourceOptions{repo: "x", verifyKeyFile: keyring, verifySSHKeyFile: signers}, wantPGP: true, wantSSH: true},
		{name: "neither", opts: sourceOptions{repo: "x"}},
		{name: "missing OpenPGP file", opts: sourceOptions{repo: "x", verifyKeyFile: missing},
			wantErr: "read --verify-key: open " + missing + ": no such file or directory"},
		{name: "missing allowed signers", opts: sourceOptions{repo: "x", verifySSHKeyFile: missing},
			wantErr: "read --verify-ssh-key: open " + missing + ": no such file or directory"},
		{name: "OpenPGP key not armored", opts: sourceOptions{repo: "x", verifyKeyFile: notArmored},
			wantErr: "read --verify-key " + notArmored + ": no armored OpenPGP public key in it"},
		{name: "allowed signers given as OpenPGP keys", opts: sourceOptions{repo: "x", verifyKeyFile: signers},
			wantErr: "read --verify-key " + signers + ": no armored OpenPGP public key in it"},
		{name: "allowed signers with an option it cannot honour", opts: sourceOptions{repo: "x", verifySSHKeyFile: badSigners},
			wantErr: "read --verify-ssh-key " + badSigners + ": line 2: option cert-authority: signatures made with SSH certificates are not supported; list the signers' own keys"},
		{name: "authorized_keys given as allowed signers", opts: sourceOptions{repo: "x", verifySSHKeyFile: pasted},
			wantErr: "read --verify-ssh-key " + pasted + ": line 1: the line starts with a key: put the signer's principals (such as an email address) before it"},
		{name: "OpenPGP keys given as allowed signers", opts: sourceOptions{repo: "x", verifySSHKeyFile: keyring},
			wantErr: "read --verify-ssh-key " + keyring + `: line 1: "PGP" is not an SSH key type`},
		{name: "allowed signers without a signer", opts: sourceOptions{repo: "x", verifySSHKeyFile: empty},
			wantErr: "read --verify-ssh-key " + empty + ": no allowed signer in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.opts.sourceConfig()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("sourceConfig() error = %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("sourceConfig(): %v", err)
			}
			if (cfg.Keyring != nil) != tc.wantPGP || (cfg.AllowedSigners != nil) != tc.wantSSH {
				t.Fatalf("keyring set %v, allowed signers set %v; want %v and %v", cfg.Keyring != nil, cfg.AllowedSigners != nil, tc.wantPGP, tc.wantSSH)
			}
		})
	}
}

// TestNewLoggerLevel: --log-level sets the lowest level logged (debug
// shows the rollout controller's actions), its default is info, and an
// unknown level or format is refused with the flag named.
func TestNewLoggerLevel(t *testing.T) {
	ctx := t.Context()
	for _, tt := range []struct {
		format, level string
		debug, info   bool
		wantErr       string
	}{
		{format: "text", level: "info", info: true},
		{format: "json", level: "debug", debug: true, info: true},
		{format: "text", level: "warn"},
		{format: "text", level: "loud", wantErr: `unknown --log-level "loud"`},
		{format: "yaml", level: "info", wantErr: `unknown --log-format "yaml"`},
	} {
		log, err := (&sourceOptions{logFormat: tt.format, logLevel: tt.level}).newLogger()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s/%s: error %v, want %q", tt.format, tt.level, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s/%s: %v", tt.format, tt.level, err)
		}
		if got := log.Enabled(ctx, slog.LevelDebug); got != tt.debug {
			t.Errorf("%s/%s: debug enabled %v, want %v", tt.format, tt.level, got, tt.debug)
		}
		if got := log.Enabled(ctx, slog.LevelInfo); got != tt.info {
			t.Errorf("%s/%s: info enabled %v, want %v", tt.format, tt.level, got, tt.info)
		}
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	var o sourceOptions
	o.addFlags(fs)
	if f := fs.Lookup("log-level"); f == nil || f.DefValue != "info" {
		t.Errorf("--log-level flag %v, want one that defaults to info", f)
	}
}
