package sync

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/sync/manifest"
)

func TestRedactorRemovesSecretValues(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db"},
		"data":       map[string]any{"token": "c3VwZXItdG9rZW4="}, // "super-token"
		"stringData": map[string]any{"password": "hunter2-canary", "pin": "123"},
	}}
	configMap := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg"},
		"data":     map[string]any{"public": "visible-value"},
	}}
	r := newRedactor([]manifest.Object{{Obj: secret}, {Obj: configMap}})

	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "stringData value", in: `invalid value "hunter2-canary"`, want: `invalid value "[redacted]"`},
		{name: "stringData value base64", in: "aHVudGVyMi1jYW5hcnk= rejected", want: "[redacted] rejected"},
		{name: "data value base64", in: "got c3VwZXItdG9rZW4=", want: "got [redacted]"},
		{name: "data value decoded", in: "got super-token", want: "got [redacted]"},
		{name: "short values are left alone", in: "port 1234", want: "port 1234"},
		{name: "ConfigMap values are not secret", in: "visible-value", want: "visible-value"},
		{name: "a URL's user info and token", in: `hook failed: Get "https://ci:pw-7781@hooks.example/run?token=tok-9911": EOF`,
			want: `hook failed: Get "https://[redacted]@hooks.example/run?token=[redacted]": EOF`},
		{name: "a URL without credentials", in: "Post https://web.shop.svc:443/validate?timeout=10s: EOF", want: "Post https://web.shop.svc:443/validate?timeout=10s: EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.text(tt.in); got != tt.want {
				t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}

	plain := errors.New("nothing secret here")
	if got := r.err(plain); got != plain {
		t.Errorf("err() replaced an error without secrets: %v", got)
	}
	wrapped := fmt.Errorf("apply Secret db: %w", errors.New("bad value hunter2-canary"))
	if got := r.err(wrapped).Error(); got != "apply Secret db: bad value [redacted]" {
		t.Errorf("err() = %q", got)
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		want     string
	}{
		{name: "first failure doubles the interval", failures: 1, want: "1m0s"},
		{name: "second", failures: 2, want: "2m0s"},
		{name: "third", failures: 3, want: "4m0s"},
		{name: "capped", failures: 4, want: "5m0s"},
		{name: "stays capped", failures: 50, want: "5m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff(DefaultInterval, DefaultMaxBackoff, tt.failures).String(); got != tt.want {
				t.Errorf("backoff(30s, 5m, %d) = %s, want %s", tt.failures, got, tt.want)
			}
		})
	}
}
