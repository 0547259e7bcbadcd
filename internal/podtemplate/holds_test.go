package podtemplate

import (
	"strings"
	"testing"
)

func TestTemplateHolds(t *testing.T) {
	git := parseTemplate(t, gitTemplate)
	for _, tc := range []struct {
		name string
		// edit turns liveTemplate, the template the API server returns
		// for gitTemplate, into the live one.
		edit func(string) string
		want bool
	}{
		{name: "as the API server returns it: defaults, stamp, 0.125Gi for 128Mi", edit: same, want: true},
		{name: "a label and an annotation another tool added", want: true, edit: func(s string) string {
			s = strings.Replace(s, "    tier: frontend\n", "    tier: frontend\n    mesh: injected\n", 1)
			return strings.Replace(s, "    team: payments\n", "    team: payments\n    policy.example.com/checked: \"true\"\n", 1)
		}},
		{name: "a field a newer API server defaults", want: true, edit: func(s string) string {
			return strings.Replace(s, "  dnsPolicy: ClusterFirst\n", "  dnsPolicy: ClusterFirst\n  enableServiceLinks: true\n", 1)
		}},
		{name: "a resource limit beside Git's requests (a key added to a map)", want: true, edit: func(s string) string {
			return strings.Replace(s, "    resources:\n", "    resources:\n      limits:\n        cpu: \"1\"\n", 1)
		}},
		{name: "kubectl set image", edit: func(s string) string {
			return strings.Replace(s, "web:1.4.2", "web:1.5.0-hotfix", 1)
		}},
		{name: "an env value edited", edit: func(s string) string {
			return strings.Replace(s, "value: prod", "value: debug", 1)
		}},
		{name: "kubectl set env: an env var added", edit: func(s string) string {
			return strings.Replace(s, "    env:\n", "    env:\n    - name: DEBUG\n      value: \"1\"\n", 1)
		}},
		{name: "a sidecar container added", edit: func(s string) string {
			return strings.Replace(s, "  dnsPolicy: ClusterFirst\n", "  - name: debug\n    image: busybox\n  dnsPolicy: ClusterFirst\n", 1)
		}},
		{name: "a volume Git sets removed", edit: func(s string) string {
			return strings.Replace(s, "  - name: scratch\n    emptyDir: {}\n", "", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := parseTemplate(t, tc.edit(liveTemplate))
			if got := Holds(live, git); got != tc.want {
				t.Errorf("Holds = %v, want %v", got, tc.want)
			}
		})
	}
}

func same(s string) string { return s }
