package redact

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"user and password", "https://ci:s3cret@example.com/status", "https://[redacted]@example.com/status"},
		{"token as the user", "https://ghp_abc123@github.com/acme/app.git", "https://[redacted]@github.com/acme/app.git"},
		{"password holding an @", "https://ci:p@ss@example.com:8443/x", "https://[redacted]@example.com:8443/x"},
		{"user info and no path", "http://u:p@example.com", "http://[redacted]@example.com"},
		{"token", "https://example.com/x?token=abc", "https://example.com/x?token=[redacted]"},
		{"access_token", "https://example.com/x?access_token=abc", "https://example.com/x?access_token=[redacted]"},
		{"api_key", "https://example.com/x?api_key=abc", "https://example.com/x?api_key=[redacted]"},
		{"apikey", "https://example.com/x?apikey=abc", "https://example.com/x?apikey=[redacted]"},
		{"api-key", "https://example.com/x?api-key=abc", "https://example.com/x?api-key=[redacted]"},
		{"key", "https://example.com/x?key=abc", "https://example.com/x?key=[redacted]"},
		{"password", "https://example.com/x?password=abc", "https://example.com/x?password=[redacted]"},
		{"secret", "https://example.com/x?client_secret=abc", "https://example.com/x?client_secret=[redacted]"},
		{"signature", "https://example.com/x?signature=abc", "https://example.com/x?signature=[redacted]"},
		{"sig of an Azure SAS", "https://acct.blob.core.windows.net/c/chart.tgz?sv=2022&sig=abc%3D", "https://acct.blob.core.windows.net/c/chart.tgz?sv=2022&sig=[redacted]"},
		{"pre-signed S3", "https://b.s3.amazonaws.com/chart.tgz?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F20260314&X-Amz-Signature=f00d&X-Amz-Security-Token=tok",
			"https://b.s3.amazonaws.com/chart.tgz?X-Amz-Algorithm=AWS4&X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Security-Token=[redacted]"},
		{"upper case name", "https://example.com/x?TOKEN=abc", "https://example.com/x?TOKEN=[redacted]"},
		{"percent-encoded name", "https://example.com/x?api%5Fkey=abc", "https://example.com/x?api%5Fkey=[redacted]"},
		{"token in the fragment", "https://example.com/cb#access_token=abc&state=1", "https://example.com/cb#access_token=[redacted]&state=1"},
		{"everything", "https://u:p@example.com/x?a=1&token=abc&b=2#c", "https://[redacted]@example.com/x?a=1&token=[redacted]&b=2#c"},
		{"no credential", "https://prometheus.monitoring:9090/api/v1/query?query=up%7Bjob%3D%22api%22%7D&time=5", "https://prometheus.monitoring:9090/api/v1/query?query=up%7Bjob%3D%22api%22%7D&time=5"},
		{"an @ in the path", "https://registry.npmjs.org/@acme/pkg", "https://registry.npmjs.org/@acme/pkg"},
		{"a parameter without a value", "https://example.com/x?token&debug", "https://example.com/x?token&debug"},
		{"an OCI reference", "oci://ghcr.io/acme/charts", "oci://ghcr.io/acme/charts"},
		{"not a URL", "token=abc", "token=abc"},
		{"already redacted", "https://[redacted]@example.com/x?token=[redacted]", "https://[redacted]@example.com/x?token=[redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URL(tc.raw); got != tc.want {
				t.Errorf("URL(%q)\n got %q\nwant %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"net/http's error", `Get "http://ci:***@127.0.0.1:1/status?token=abc": dial tcp 127.0.0.1:1: connect: connection refused`,
			`Get "http://[redacted]@127.0.0.1:1/status?token=[redacted]": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"a URL the message formats, then a colon", "GET https://example.com/x?api_key=abc: status 500 Internal Server Error",
			"GET https://example.com/x?api_key=[redacted]: status 500 Internal Server Error"},
		{"quoted with %q", `web.url: "ftp://u:p@example.com/x" is not an absolute http or https URL`,
			`web.url: "ftp://[redacted]@example.com/x" is not an absolute http or https URL`},
		{"two URLs in parentheses", "index (https://a:b@charts.example.com/index.yaml) names (https://cdn.example.com/c.tgz?sig=xyz).",
			"index (https://[redacted]@charts.example.com/index.yaml) names (https://cdn.example.com/c.tgz?sig=[redacted])."},
		{"a wrapped error", "commit 1a2b3c4 not applied (render failed; still running 0f0f0f0): chart web: read archive https://cdn.example.com/web-1.2.3.tgz?X-Amz-Signature=f00d: 403 Forbidden",
			"commit 1a2b3c4 not applied (render failed; still running 0f0f0f0): chart web: read archive https://cdn.example.com/web-1.2.3.tgz?X-Amz-Signature=[redacted]: 403 Forbidden"},
		{"no credential", "GET http://api.shop/status: status 500 Internal Server Error", "GET http://api.shop/status: status 500 Internal Server Error"},
		{"no URL", "query returned no data", "query returned no data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.text); got != tc.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestError redacts the error net/http returns for a URL with
// credentials and keeps its chain; an error without one comes back as
// it is.
func TestError(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://ci:s3cret@127.0.0.1:1/status?token=tok123", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, doErr := http.DefaultClient.Do(req)
	if doErr == nil {
		t.Fatal("a request to a closed port succeeded")
	}
	wrapped := fmt.Errorf("measure web: %w", doErr)
	got := Error(wrapped)
	for _, leak := range []string{"ci:", "s3cret", "tok123"} {
		if strings.Contains(got.Error(), leak) {
			t.Errorf("Error(%q) = %q: shows %q", wrapped, got, leak)
		}
	}
	if !strings.Contains(got.Error(), "http://[redacted]@127.0.0.1:1/status?token=[redacted]") {
		t.Errorf("Error(%q) = %q: want the URL redacted", wrapped, got)
	}
	var uerr *url.Error
	if !errors.As(got, &uerr) {
		t.Errorf("Error(%q) lost the *url.Error it wraps", wrapped)
	}
	plain := errors.New("query returned no data")
	if Error(plain) != plain {
		t.Error("an error without a URL was replaced")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}
