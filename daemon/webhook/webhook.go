// Package webhook receives push notifications from Git hosts and triggers a
// sync at once, instead of at the next poll. A request must prove it knows
// the shared secret: GitHub signs the body (X-Hub-Signature-256, HMAC
// SHA-256), GitLab sends the secret itself (X-Gitlab-Token). Anything else
// gets 401 and triggers nothing.
//
// The handler spends as little as it can on a request that cannot be
// authentic: one with neither header is refused before its body is read, a
// body over MaxBodyBytes is cut off at the limit (413), and at most
// MaxConcurrent requests are served at once (503 beyond). The server's
// read timeout (ServerTimeouts) bounds how long a client may take to send
// one.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// Headers and limits of the webhook.
const (
	// HeaderGitHubSignature carries "sha256=<hex HMAC of the body>".
	HeaderGitHubSignature = "X-Hub-Signature-256"
	// HeaderGitLabToken carries the shared secret.
	HeaderGitLabToken = "X-Gitlab-Token"
	// MaxBodyBytes bounds the body read to check a signature; push
	// payloads are far smaller.
	MaxBodyBytes = 1 << 20
	// MaxConcurrent bounds the hook requests served at once; a Git host
	// sends one per push.
	MaxConcurrent = 8

	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// the HTTP server's (see ServerTimeouts). 1 MiB in 10 s needs 100
	// KiB/s; a client that trickles its body slower is cut off.
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 60 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10

	githubPrefix = "sha256="
)

// ServerTimeouts sets the timeouts and header limit above on srv, so that
// no client holds a connection or a goroutine longer than them.
func ServerTimeouts(srv *http.Server) {
	srv.ReadHeaderTimeout, srv.ReadTimeout = ReadHeaderTimeout, ReadTimeout
	srv.WriteTimeout, srv.IdleTimeout = WriteTimeout, IdleTimeout
	srv.MaxHeaderBytes = MaxHeaderBytes
}

// Handler answers POST requests whose signature or token matches secret by
// calling trigger and replying 202 Accepted. It never blocks on the sync:
// trigger only signals. The secret must not be empty. Refusals: 405 for
// another method, 401 without credentials or with wrong ones, 413 for a
// signed body over MaxBodyBytes, 503 while MaxConcurrent requests are in
// hand, 400 for a body that cannot be read (a client that stopped sending).
func Handler(secret []byte, trigger func()) http.Handler {
	slots := make(chan struct{}, MaxConcurrent)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many hook requests at once", http.StatusServiceUnavailable)
			return
		}
		signed := r.Header.Get(HeaderGitHubSignature) != ""
		if !signed && r.Header.Get(HeaderGitLabToken) == "" {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var body []byte
		if signed {
			var err error
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				http.Error(w, "body over 1 MiB", http.StatusRequestEntityTooLarge)
				return
			case err != nil:
				http.Error(w, "cannot read body", http.StatusBadRequest)
				return
			}
		}
		if !Authentic(secret, r.Header, body) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		trigger()
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "sync triggered\n")
	})
}

// Authentic reports whether the request headers prove knowledge of secret:
// a GitHub HMAC of body, or a GitLab token. Comparisons take constant time.
func Authentic(secret []byte, h http.Header, body []byte) bool {
	if len(secret) == 0 {
		return false
	}
	if sig := h.Get(HeaderGitHubSignature); sig != "" {
		got, err := hex.DecodeString(strings.TrimPrefix(sig, githubPrefix))
		if err != nil || !strings.HasPrefix(sig, githubPrefix) {
			return false
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		return hmac.Equal(got, mac.Sum(nil))
	}
	if token := h.Get(HeaderGitLabToken); token != "" {
		return subtle.ConstantTimeCompare([]byte(token), secret) == 1
	}
	return false
}

// Sign returns the X-Hub-Signature-256 value GitHub sends for body; for
// clients and tests that post hooks.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return githubPrefix + hex.EncodeToString(mac.Sum(nil))
}
