package source

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// Auth is how to authenticate to the remote. The zero value is anonymous
// access. HTTP(S) URLs take Username/Password; SSH URLs take SSHKey and
// always KnownHosts; file URLs take nothing. Setting fields that do not
// apply to the URL's transport is an error, so a misconfiguration is not
// silently ignored. None of these values ever appears in an error.
type Auth struct {
	// Username and Password are HTTP(S) basic auth. A token is given as
	// Password; Username then defaults to "git".
	Username string
	Password string

	// SSHKey is a PEM-encoded private key (OpenSSH, PKCS#1, PKCS#8), and
	// SSHKeyPassphrase its passphrase when it is encrypted.
	SSHKey           []byte
	SSHKeyPassphrase string
	// SSHUser is the SSH login; it defaults to the user in the URL, else
	// "git".
	SSHUser string
	// KnownHosts is the content of a known_hosts file. It is required for
	// SSH: the server's host key is always checked against it.
	KnownHosts []byte
}

// secrets lists the values that must never appear in an error.
func (a Auth) secrets() []string {
	var out []string
	for _, s := range []string{a.Password, a.SSHKeyPassphrase, strings.TrimSpace(string(a.SSHKey))} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (a Auth) hasHTTP() bool { return a.Username != "" || a.Password != "" }

func (a Auth) hasSSH() bool {
	return len(a.SSHKey) > 0 || a.SSHKeyPassphrase != "" || a.SSHUser != "" || len(a.KnownHosts) > 0
}

// authMethod checks the credentials against the URL's transport and builds
// the go-git auth method for it (nil for anonymous access).
func authMethod(u remoteURL, a Auth, timeout time.Duration) (transport.AuthMethod, error) {
	switch u.kind {
	case kindFile:
		if a.hasHTTP() || a.hasSSH() {
			return nil, errors.New("file repository URLs take no credentials")
		}
		return nil, nil
	case kindHTTP, kindHTTPS:
		if a.hasSSH() {
			return nil, errors.New("SSH key, user and known_hosts apply only to SSH repository URLs")
		}
		if a.Password == "" {
			if a.Username != "" {
				return nil, errors.New("HTTP username is set without a password or token")
			}
			return nil, nil
		}
		user := a.Username
		if user == "" {
			user = defaultHTTPUser
		}
		return &githttp.BasicAuth{Username: user, Password: a.Password}, nil
	case kindSSH:
		if a.hasHTTP() {
			return nil, errors.New("username and password apply only to HTTP(S) repository URLs; SSH needs a private key")
		}
		return newSSHAuth(u, a, timeout)
	}
	return nil, fmt.Errorf("repository URL scheme %q is not supported", u.kind)
}

// sshAuth authenticates with one private key and checks the host key
// against the configured known_hosts only.
type sshAuth struct {
	user       string
	signer     ssh.Signer
	hostKeys   ssh.HostKeyCallback
	algorithms []string
	timeout    time.Duration
}

var _ gitssh.AuthMethod = (*sshAuth)(nil)

// Name names the method as go-git's public-key method does.
func (a *sshAuth) Name() string { return gitssh.PublicKeysName }

// String describes the method without any key material.
func (a *sshAuth) String() string { return "user: " + a.user + ", name: " + a.Name() }

// ClientConfig returns a fresh SSH client configuration for one connection.
func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{
		User:              a.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(a.signer)},
		HostKeyCallback:   a.hostKeys,
		HostKeyAlgorithms: a.algorithms,
		Timeout:           a.timeout,
	}, nil
}

func newSSHAuth(u remoteURL, a Auth, timeout time.Duration) (*sshAuth, error) {
	if len(a.SSHKey) == 0 {
		return nil, errors.New("SSH repository URL needs a private key")
	}
	if len(bytes.TrimSpace(a.KnownHosts)) == 0 {
		return nil, errors.New("SSH repository URL needs known_hosts: host keys are always checked")
	}
	signer, err := parseSSHKey(a.SSHKey, a.SSHKeyPassphrase)
	if err != nil {
		return nil, err
	}
	hostKeys, algorithms, err := knownHosts(a.KnownHosts, u.hostWithPort())
	if err != nil {
		return nil, err
	}
	user := a.SSHUser
	if user == "" {
		user = u.user
	}
	if user == "" {
		user = defaultSSHUser
	}
	return &sshAuth{
		user:       user,
		signer:     signer,
		hostKeys:   hostKeys,
		algorithms: algorithms,
		timeout:    timeout,
	}, nil
}

// parseSSHKey reads a private key. Its errors come from the key parser,
// which names the problem but never the key bytes or the passphrase.
func parseSSHKey(key []byte, passphrase string) (ssh.Signer, error) {
	var (
		signer ssh.Signer
		err    error
	)
	if passphrase == "" {
		signer, err = ssh.ParsePrivateKey(key)
	} else {
		signer, err = ssh.ParsePrivateKeyWithPassphrase(key, []byte(passphrase))
	}
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return nil, errors.New("SSH private key is encrypted: its passphrase is needed")
	case err != nil:
		return nil, fmt.Errorf("read SSH private key: %w", err)
	}
	return signer, nil
}

// knownHosts parses known_hosts content and returns the host-key check for
// it, with the key algorithms it knows for host (host:port), so that the
// server is asked for a key type known_hosts can check. The parser reads
// files, so the content goes through a temporary file removed at once.
func knownHosts(content []byte, host string) (ssh.HostKeyCallback, []string, error) {
	rest := content
	for len(bytes.TrimSpace(rest)) > 0 {
		var err error
		_, _, _, _, rest, err = ssh.ParseKnownHosts(rest)
		if err != nil {
			return nil, nil, fmt.Errorf("read known_hosts: %w", err)
		}
	}

	f, err := os.CreateTemp("", "known_hosts-*")
	if err != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, werr := f.Write(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", err)
	}
	db, err := gitssh.NewKnownHostsDb(f.Name())
	if err != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", err)
	}
	if len(db.HostKeys(host)) == 0 {
		return nil, nil, fmt.Errorf("known_hosts has no key for %s", host)
	}
	return db.HostKeyCallback(), db.HostKeyAlgorithms(host), nil
}

// redactedError hides secrets in an error's text while keeping the chain
// for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact replaces every secret in err's text. It is the last step before an
// error leaves the package, a guard behind the rule that errors are built
// without secrets in the first place.
func redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		clean = strings.ReplaceAll(clean, s, redactedText)
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}
