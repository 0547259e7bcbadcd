package source

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshKey is a fresh ed25519 key pair with its PEM private key.
type sshKey struct {
	signer ssh.Signer
	pem    []byte
}

func newSSHKey(t *testing.T, passphrase string) sshKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate ed25519 key: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("signer: %v", err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatalf("marshal private key: %v", err)
	}
	return sshKey{signer: signer, pem: pem.EncodeToMemory(block)}
}

// knownHostsLine is a known_hosts line for addr (host:port) and key.
func knownHostsLine(addr string, key ssh.PublicKey) []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n")
}

// serveGitSSH serves git-upload-pack over SSH on 127.0.0.1 to clients
// holding the client key, with hostKey as the server's key. It returns the
// address.
func serveGitSSH(t *testing.T, hostKey ssh.Signer, client ssh.PublicKey) string {
	t.Helper()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveSSHConn(conn, cfg) })
		}
	})
	return ln.Addr().String()
}

func serveSSHConn(conn net.Conn, cfg *ssh.ServerConfig) {
	defer func() { _ = conn.Close() }()
	sc, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	defer func() { _ = sc.Close() }()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go serveSSHSession(ch, chReqs)
	}
}

// serveSSHSession runs "git-upload-pack '<path>'" and nothing else.
func serveSSHSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		repoPath, ok := strings.CutPrefix(payload.Command, "git-upload-pack ")
		if !ok {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		cmd := exec.Command("git", "upload-pack", strings.Trim(repoPath, "'"))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		cmd.Stdout = ch
		cmd.Stderr = ch.Stderr()
		if err := cmd.Start(); err != nil {
			return
		}
		go func() {
			_, _ = io.Copy(stdin, ch)
			_ = stdin.Close()
		}()
		status := uint32(0)
		if err := cmd.Wait(); err != nil {
			status = 1
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

func TestSSH(t *testing.T) {
	const canary = "CANARY-ssh-passphrase-41b7"
	remoteDir, _, head := newPushedRemote(t, "one", map[string]string{"apps/web.yaml": "kind: Deployment\n"}, nil)

	hostKey := newSSHKey(t, "")
	clientKey := newSSHKey(t, canary)
	addr := serveGitSSH(t, hostKey.signer, clientKey.signer.PublicKey())
	_, port, _ := net.SplitHostPort(addr)
	url := "ssh://git@" + addr + remoteDir
	goodHosts := knownHostsLine(addr, hostKey.signer.PublicKey())
	otherHost := newSSHKey(t, "")
	stranger := newSSHKey(t, canary)

	for _, tc := range []struct {
		name    string
		url     string
		auth    Auth
		wantErr string // error suffix after the action; "" for success
	}{
		{
			name: "key and known host",
			url:  url,
			auth: Auth{SSHKey: clientKey.pem, SSHKeyPassphrase: canary, KnownHosts: goodHosts},
		},
		{
			name: "scp-like URL with a port",
			url:  "git@127.0.0.1:" + port + ":" + remoteDir,
			auth: Auth{SSHKey: clientKey.pem, SSHKeyPassphrase: canary, KnownHosts: goodHosts},
		},
		{
			name:    "host key differs from known_hosts",
			url:     url,
			auth:    Auth{SSHKey: clientKey.pem, SSHKeyPassphrase: canary, KnownHosts: knownHostsLine(addr, otherHost.signer.PublicKey())},
			wantErr: "ssh: handshake failed: knownhosts: key mismatch",
		},
		{
			name:    "key the server does not know",
			url:     url,
			auth:    Auth{SSHKey: stranger.pem, SSHKeyPassphrase: canary, KnownHosts: goodHosts},
			wantErr: "ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, Config{URL: tc.url, Auth: tc.auth})
			if tc.wantErr == "" {
				snap := syncTo(t, r, head)
				if got := readFile(t, snap, "apps/web.yaml"); got != "kind: Deployment\n" {
					t.Fatalf("apps/web.yaml = %q", got)
				}
				return
			}
			_, err := r.Head(context.Background())
			assertErr(t, err, "list remote refs of "+tc.url+": "+tc.wantErr)
			for _, secret := range []string{canary, string(tc.auth.SSHKey), strings.Split(string(tc.auth.SSHKey), "\n")[1]} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error leaks a secret: %v", err)
				}
			}
		})
	}
}
