// Package webhook receives push notifications from Git hosts and triggers a
// sync at once, instead of at the next poll. A request must prove it knows
// the shared secret: GitHub signs the body (X-Hub-Signature-256, HMAC
// SHA-256), GitLab sends the secret itself (X-Gitlab-Token). Anything else
// gets 401 and triggers nothing.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
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

	githubPrefix = "sha256="
)

// Handler answers POST requests whose signature or token matches secret by
// calling trigger and replying 202 Accepted. It never blocks on the sync:
// trigger only signals. The secret must not be empty.
func Handler(secret []byte, trigger func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil || len(body) > MaxBodyBytes {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
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
