package podtemplate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const sha256Hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		name  string
		image string
		want  corev1.PullPolicy
	}{
		{"no tag means latest", "nginx", corev1.PullAlways},
		{"latest tag", "nginx:latest", corev1.PullAlways},
		{"version tag", "nginx:1.27", corev1.PullIfNotPresent},
		{"tag is case-sensitive", "nginx:Latest", corev1.PullIfNotPresent},
		{"digest", "nginx@sha256:" + sha256Hex, corev1.PullIfNotPresent},
		{"latest tag and digest", "nginx:latest@sha256:" + sha256Hex, corev1.PullAlways},
		{"version tag and digest", "nginx:1.27@sha256:" + sha256Hex, corev1.PullIfNotPresent},
		{"sha512 digest", "nginx@sha512:" + sha256Hex + sha256Hex, corev1.PullIfNotPresent},
		{"registry port is not a tag", "registry.example.com:5000/team/web", corev1.PullAlways},
		{"registry port and tag", "registry.example.com:5000/team/web:2.0", corev1.PullIfNotPresent},
		{"localhost registry", "localhost/web:1.0", corev1.PullIfNotPresent},
		{"IPv6 registry", "[::1]:5000/web", corev1.PullAlways},
		{"docker hub organisation", "bitnami/redis", corev1.PullAlways},
		{"index.docker.io", "index.docker.io/library/nginx:1.27", corev1.PullIfNotPresent},
		{"separators in the path", "ghcr.io/my-org/my__app.v2/web--x:1.0", corev1.PullIfNotPresent},
		{"upper-case domain", "Registry.Example.com/web", corev1.PullAlways},
		{"underscore first element is a path", "my_registry.io/web", corev1.PullAlways},
		{"image that does not exist is still tagged", "registry.example.com/does-not-exist:1.0", corev1.PullIfNotPresent},

		// References the API server cannot parse get IfNotPresent.
		{"invalid: upper-case repository", "Nginx", corev1.PullIfNotPresent},
		{"invalid: upper-case path", "ghcr.io/Org/web", corev1.PullIfNotPresent},
		{"invalid: empty", "", corev1.PullIfNotPresent},
		{"invalid: image ID", sha256Hex, corev1.PullIfNotPresent},
		{"invalid: short digest", "nginx@sha256:abc", corev1.PullIfNotPresent},
		{"invalid: unknown digest algorithm", "nginx@md5:" + sha256Hex, corev1.PullIfNotPresent},
		{"invalid: empty tag", "nginx:", corev1.PullIfNotPresent},
		{"invalid: tag starting with a dot", "nginx:.1", corev1.PullIfNotPresent},
		{"invalid: tag too long", "nginx:" + strings.Repeat("a", 129), corev1.PullIfNotPresent},
		{"invalid: double dot in path", "ghcr.io/a..b", corev1.PullIfNotPresent},
		{"invalid: triple underscore", "ghcr.io/a___b", corev1.PullIfNotPresent},
		{"invalid: trailing slash", "ghcr.io/web/", corev1.PullIfNotPresent},
		{"invalid: port not a number", "registry:http/web", corev1.PullIfNotPresent},
		{"invalid: path too long", "ghcr.io/" + strings.Repeat("a", 256), corev1.PullIfNotPresent},
		{"invalid: space", "nginx 1.27", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultPullPolicy(tt.image); got != tt.want {
				t.Errorf("defaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}
