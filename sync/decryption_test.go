package sync

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestRedactorHidesDecryptedValues(t *testing.T) {
	r := newRedactor(nil, "api-token-1234", "abc")
	msg := `Deployment "web" is invalid: spec.template.spec.containers[0].image: Invalid value: "api-token-1234", and ` +
		base64.StdEncoding.EncodeToString([]byte("api-token-1234")) + " abc"
	got := r.text(msg)
	if strings.Contains(got, "api-token-1234") || strings.Contains(got, base64.StdEncoding.EncodeToString([]byte("api-token-1234"))) {
		t.Errorf("text(%q) = %q keeps a decrypted value", msg, got)
	}
	if !strings.Contains(got, `Invalid value: "[redacted]"`) || !strings.HasSuffix(got, " abc") {
		t.Errorf("text(%q) = %q: want the value replaced, and values shorter than %d kept", msg, got, minSecretLen)
	}
}
