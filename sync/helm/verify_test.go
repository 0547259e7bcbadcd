package helm

import (
	"fmt"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
)

// TestVerifyOCICharts: with VerifyKeys, a chart from an OCI registry is
// rendered only once a trusted key signed its manifest; unsigned, or
// signed by another key, it fails naming the chart, its digest and why.
func TestVerifyOCICharts(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	key, other, keys := artifacttest.NewKeys(t)
	release := func(version string) map[string]string {
		return map[string]string{"web.yaml": fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec:\n  repo: oci://%s/charts\n  chart: web\n  version: %s\n  plainHTTP: true\n", reg.Host, version)}
	}
	versioned := func(version string) []byte {
		return helmtest.Chart(t, "web", map[string]string{
			"Chart.yaml":        "apiVersion: v2\nname: web\nversion: " + version + "\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		})
	}
	unsigned := reg.PushChart(t, "charts/web", "1.0.0", versioned("1.0.0"))
	_, err := renderTree(t, repoFS(release("1.0.0"), "x", nil), Config{VerifyKeys: keys})
	mustFail(t, err, "chart "+reg.Host+"/charts/web:1.0.0 refused", unsigned, "carries no cosign signature")
	if me := asManifestError(t, err); !strings.Contains(me.Error(), "is not signed by a trusted key") {
		t.Errorf("error %v: want a bad-input error with the signature check's reason", me)
	}

	byOther := reg.PushChart(t, "charts/web", "1.1.0", versioned("1.1.0"))
	reg.Sign(t, "charts/web", byOther, other)
	_, err = renderTree(t, repoFS(release("1.1.0"), "x", nil), Config{VerifyKeys: keys})
	mustFail(t, err, byOther, "signed by a key the sync does not trust")

	signed := reg.PushChart(t, "charts/web", "1.2.0", versioned("1.2.0"))
	reg.SignBundle(t, "charts/web", signed, key)
	out, err := renderTree(t, repoFS(release("1.2.0"), "x", nil), Config{VerifyKeys: keys})
	if err != nil || len(out.Objects) != 1 {
		t.Fatalf("a signed chart: %v", err)
	}
	if _, err := renderTree(t, repoFS(release("1.0.0"), "x", nil), Config{}); err != nil {
		t.Errorf("without keys, an unsigned chart: %v", err)
	}
}
