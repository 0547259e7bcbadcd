package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHangingServer(t *testing.T) {
	const timeout = time.Second
	hostKey := newSSHKey(t, "")
	clientKey := newSSHKey(t, "")

	for _, tc := range []struct {
		name string
		// config returns the Config for a server at addr that never answers.
		config func(addr string) Config
		// again is the error suffix of a second call made at once: an SSH
		// handshake ignores cancellation, so the first call still holds the
		// repository and the second one waits for it in vain.
		again string
	}{
		{
			name:   "http",
			config: func(addr string) Config { return Config{URL: "http://" + addr + "/repo.git"} },
			again:  "no answer from the Git server in time (timeout 1s)",
		},
		{
			name: "ssh",
			config: func(addr string) Config {
				return Config{URL: "ssh://git@" + addr + "/repo.git", Auth: Auth{
					SSHKey:     clientKey.pem,
					KnownHosts: knownHostsLine(addr, hostKey.signer.PublicKey()),
				}}
			},
			again: "no answer from the Git server in time (an earlier call is still waiting after 1s)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.config(silentServer(t))
			cfg.Timeout = timeout
			r := newRepo(t, cfg)
			ctx := context.Background()

			start := time.Now()
			_, err := r.Head(ctx)
			elapsed := time.Since(start)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("Head error = %v, want ErrTimeout", err)
			}
			assertErr(t, err, "list remote refs of "+cfg.URL+": no answer from the Git server in time (timeout 1s)")
			if elapsed < timeout || elapsed > 3*timeout {
				t.Fatalf("Head returned after %s, want about %s", elapsed, timeout)
			}

			err = r.Fetch(ctx, strings.Repeat("d", 40))
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("Fetch error = %v, want ErrTimeout", err)
			}
			assertErr(t, err, "fetch main of "+cfg.URL+": "+tc.again)
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	addr := closedPort(t)
	url := "http://" + addr + "/repo.git"
	r := newRepo(t, Config{URL: url, Timeout: time.Second})
	start := time.Now()
	_, err := r.Head(context.Background())
	if errors.Is(err, ErrTimeout) {
		t.Fatalf("a refused connection is not a timeout: %v", err)
	}
	assertErr(t, err, `list remote refs of `+url+`: Get "`+url+`/info/refs?service=git-upload-pack": dial tcp `+addr+`: connect: connection refused`)
	if elapsed := time.Since(start); elapsed >= time.Second {
		t.Fatalf("Head took %s on a refused connection", elapsed)
	}
}
