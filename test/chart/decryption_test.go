//go:build e2e

package chart

import (
	"slices"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestChartDecryption: decryption.secret becomes --decryption-secret,
// in the release namespace unless it names one; decryption.required
// becomes --decryption-required; neither flag without them, and a
// malformed name is refused.
func TestChartDecryption(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"none", nil, nil},
		{"a name", []string{"decryption.secret=sops-keys"}, []string{"--decryption-secret=plimsoll-system/sops-keys"}},
		{"namespace/name, required", []string{"decryption.secret=keys/sops-age", "decryption.required=true"},
			[]string{"--decryption-secret=keys/sops-age", "--decryption-required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := deployment(t, render(t, tc.set...)).Spec.Template.Spec.Containers[0].Args
			var got []string
			for _, a := range args {
				if strings.HasPrefix(a, "--decryption-") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("decryption flags %q, want %q", got, tc.want)
			}
		})
	}
	out, err := kit.Helm(t, "template", "plimsoll", "charts/plimsoll", "--set", "repo.url="+repoURL, "--set", "decryption.secret=Not/A_Name")
	if err == nil || !strings.Contains(err.Error(), "decryption/secret") {
		t.Errorf("a malformed decryption.secret: err %v, output %q", err, out)
	}
}
