package manifest

import "testing"

// TestRedactURLCredentials: a kustomize message quoting a remote
// resource's URL shows it without its user info or token.
func TestRedactURLCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"user info", "accumulating resources: https://ci:ghp_tok9911@github.com/acme/base//app?ref=v1: repository not found",
			"accumulating resources: https://[redacted]@github.com/acme/base//app?ref=v1: repository not found"},
		{"a query token", "loading https://files.example/base.yaml?access_token=tok9911: 401",
			"loading https://files.example/base.yaml?access_token=[redacted]: 401"},
		{"no credential", "accumulating resources: https://github.com/acme/base//app?ref=v1: repository not found",
			"accumulating resources: https://github.com/acme/base//app?ref=v1: repository not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact(tc.msg, nil); got != tc.want {
				t.Errorf("redact(%q)\n got %q\nwant %q", tc.msg, got, tc.want)
			}
		})
	}
}
