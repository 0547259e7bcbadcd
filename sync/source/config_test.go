package source

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewRefusesBadConfig(t *testing.T) {
	const canary = "CANARY-c0nf1g-9d2e"
	hostKey := newSSHKey(t, "")
	clientKey := newSSHKey(t, "")
	lockedKey := newSSHKey(t, "right passphrase")
	hosts := knownHostsLine("example.com:22", hostKey.signer.PublicKey())
	_, armoredKey := newPGPKey(t, "signer")
	_, signersLine := newAllowedSigner(t, "signer@example.com", "")

	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		// URLs.
		{name: "empty URL", cfg: Config{}, want: "repository URL is empty"},
		{
			name: "password in https URL",
			cfg:  Config{URL: "https://alice:" + canary + "@git.example.com/org/repo.git"},
			want: "repository URL https://git.example.com/org/repo.git carries credentials: give them in the auth settings instead",
		},
		{
			name: "token in https URL",
			cfg:  Config{URL: "https://" + canary + "@git.example.com/org/repo.git"},
			want: "repository URL https://git.example.com/org/repo.git carries credentials: give them in the auth settings instead",
		},
		{
			name: "password in ssh URL",
			cfg:  Config{URL: "ssh://git:" + canary + "@git.example.com/org/repo.git"},
			want: "repository URL ssh://git.example.com/org/repo.git carries credentials: give them in the auth settings instead",
		},
		{
			name: "password in scp-like URL",
			cfg:  Config{URL: "git:" + canary + "@git.example.com:org/repo.git"},
			want: "repository URL git.example.com:org/repo.git carries credentials: give them in the auth settings instead",
		},
		{
			name: "user in file URL",
			cfg:  Config{URL: "file://" + canary + "@/srv/repo.git"},
			want: "repository URL file:///srv/repo.git carries credentials: give them in the auth settings instead",
		},
		{name: "URL beginning with a dash", cfg: Config{URL: "-uhttps://x/y.git"}, want: `repository URL must not begin with "-"`},
		{name: "host beginning with a dash", cfg: Config{URL: "ssh://-oProxyCommand=x/repo.git"}, want: `repository host must not begin with "-"`},
		{name: "scp-like host beginning with a dash", cfg: Config{URL: "-oProxyCommand=x:repo.git"}, want: `repository URL must not begin with "-"`},
		{name: "space in URL", cfg: Config{URL: "https://git.example.com/a b.git"}, want: "repository URL must not contain spaces or control characters"},
		{name: "unsupported scheme", cfg: Config{URL: "ftp://git.example.com/repo.git"}, want: `repository URL scheme "ftp" is not supported (use file, http, https or ssh)`},
		{name: "git protocol", cfg: Config{URL: "git://git.example.com/repo.git"}, want: `repository URL scheme "git" is not supported (use file, http, https or ssh)`},
		{name: "bare local path", cfg: Config{URL: "/srv/repo.git"}, want: "repository URL is not supported: use file://, http://, https://, ssh:// or user@host:path"},
		{name: "query in URL", cfg: Config{URL: "https://git.example.com/repo.git?private_token=" + canary}, want: "repository URL must not have a query or a fragment"},
		{name: "no host", cfg: Config{URL: "https:///repo.git"}, want: "repository URL has no host"},
		{name: "no path", cfg: Config{URL: "https://git.example.com/"}, want: "repository URL has no repository path"},
		{name: "file URL with a host", cfg: Config{URL: "file://server/srv/repo.git"}, want: "file repository URL must not name a host (use file:///absolute/path)"},

		// Branches.
		{name: "branch beginning with a dash", cfg: Config{URL: "file:///srv/repo.git", Branch: "-f"}, want: `branch must not begin with "-"`},
		{name: "branch with dots", cfg: Config{URL: "file:///srv/repo.git", Branch: "a..b"}, want: `branch "a..b" is not a valid branch name`},
		{name: "branch with a space", cfg: Config{URL: "file:///srv/repo.git", Branch: "a b"}, want: `branch "a b" is not a valid branch name`},

		// Credentials that do not fit the transport.
		{name: "credentials for a file URL", cfg: Config{URL: "file:///srv/repo.git", Auth: Auth{Password: canary}}, want: "file repository URLs take no credentials"},
		{name: "SSH key for an https URL", cfg: Config{URL: "https://git.example.com/repo.git", Auth: Auth{SSHKey: clientKey.pem}}, want: "SSH key, user and known_hosts apply only to SSH repository URLs"},
		{name: "username without password", cfg: Config{URL: "https://git.example.com/repo.git", Auth: Auth{Username: "alice"}}, want: "HTTP username is set without a password or token"},
		{name: "password for an ssh URL", cfg: Config{URL: "ssh://git.example.com/repo.git", Auth: Auth{Password: canary}}, want: "username and password apply only to HTTP(S) repository URLs; SSH needs a private key"},

		// SSH.
		{name: "ssh without a key", cfg: Config{URL: "git@example.com:repo.git", Auth: Auth{KnownHosts: hosts}}, want: "SSH repository URL needs a private key"},
		{name: "ssh without known_hosts", cfg: Config{URL: "git@example.com:repo.git", Auth: Auth{SSHKey: clientKey.pem}}, want: "SSH repository URL needs known_hosts: host keys are always checked"},
		{name: "known_hosts without the host", cfg: Config{URL: "ssh://git@example.com:2222/repo.git", Auth: Auth{SSHKey: clientKey.pem, KnownHosts: hosts}}, want: "known_hosts has no key for example.com:2222"},
		{name: "unparsable known_hosts", cfg: Config{URL: "git@example.com:repo.git", Auth: Auth{SSHKey: clientKey.pem, KnownHosts: []byte("example.com not-a-key\n")}}, want: "read known_hosts: ssh: invalid entry in known_hosts data"},
		{name: "unparsable key", cfg: Config{URL: "git@example.com:repo.git", Auth: Auth{SSHKey: []byte(canary), KnownHosts: hosts}}, want: "read SSH private key: ssh: no key found"},
		{name: "encrypted key without passphrase", cfg: Config{URL: "git@example.com:repo.git", Auth: Auth{SSHKey: lockedKey.pem, KnownHosts: hosts}}, want: "SSH private key is encrypted: its passphrase is needed"},
		{name: "encrypted key, wrong passphrase", cfg: Config{URL: "git@example.com:repo.git", Auth: Auth{SSHKey: lockedKey.pem, SSHKeyPassphrase: canary, KnownHosts: hosts}}, want: "read SSH private key: x509: decryption password incorrect"},

		// Other settings.
		{name: "no clone directory", cfg: Config{URL: "file:///srv/repo.git"}, want: "directory for the local clone is not set"},
		{name: "negative timeout", cfg: Config{URL: "file:///srv/repo.git", Timeout: -1}, want: "timeout -1ns is negative"},
		{name: "negative file limit", cfg: Config{URL: "file:///srv/repo.git", MaxFileBytes: -1}, want: "maximum file size -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.cfg)
			if r != nil {
				t.Fatalf("New returned a Repository for a bad config")
			}
			assertErr(t, err, tc.want)
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("error leaks the secret: %v", err)
			}
		})
	}

	t.Run("good config", func(t *testing.T) {
		_, err := New(Config{
			URL:            "ssh://git@example.com/repo.git",
			Branch:         "refs/heads/release",
			Dir:            filepath.Join(t.TempDir(), "clone"),
			Auth:           Auth{SSHKey: lockedKey.pem, SSHKeyPassphrase: "right passphrase", KnownHosts: hosts},
			Keyring:        readKeyring(t, armoredKey),
			AllowedSigners: readSigners(t, signersLine),
		})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
	})
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     string
		secrets []string
		want    string
	}{
		{name: "no secret in text", msg: "dial tcp: refused", secrets: []string{"hunter2"}, want: "dial tcp: refused"},
		{name: "secret in text", msg: "bad password hunter2 for alice", secrets: []string{"hunter2"}, want: "bad password [redacted] for alice"},
		{name: "two secrets", msg: "k=abc p=xyz", secrets: []string{"abc", "xyz"}, want: "k=[redacted] p=[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &testError{tc.msg}
			err := redact(inner, tc.secrets)
			assertErr(t, err, tc.want)
			var target *testError
			if !errors.As(err, &target) {
				t.Fatalf("redacted error lost its chain")
			}
		})
	}
}

type testError struct{ msg string }

func (e *testError) Error() string { return e.msg }
