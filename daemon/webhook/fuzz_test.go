package webhook

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzAuthentic: a GitHub signature of the body with the secret always
// authenticates; any signature or token value of another secret, or of
// another body, never does; nothing panics.
func FuzzAuthentic(f *testing.F) {
	f.Add([]byte("s3cret"), []byte(`{"ref":"refs/heads/main"}`), "sha256=00", "token")
	f.Add([]byte("k"), []byte{}, "", "")
	f.Add([]byte{0}, []byte{0xff}, "sha256=zz", "k")
	f.Fuzz(func(t *testing.T, secret, body []byte, signature, token string) {
		good := http.Header{}
		good.Set(HeaderGitHubSignature, Sign(secret, body))
		if len(secret) > 0 && !Authentic(secret, good, body) {
			t.Errorf("the body's own signature did not authenticate")
		}
		if Authentic(secret, good, append([]byte("x"), body...)) {
			t.Errorf("a signature authenticated another body")
		}
		h := http.Header{}
		h.Set(HeaderGitHubSignature, signature)
		if Authentic(secret, h, body) && !strings.EqualFold(signature, Sign(secret, body)) {
			t.Errorf("signature %q authenticated without being the body's", signature)
		}
		h = http.Header{}
		h.Set(HeaderGitLabToken, token)
		if Authentic(secret, h, body) && token != string(secret) {
			t.Errorf("token %q authenticated without being the secret", token)
		}
	})
}
