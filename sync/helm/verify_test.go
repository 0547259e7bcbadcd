package helm

import (
	"fmt"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
)

// TestVerifyOCICharts: with VerifyKeys, a chart from an OCI registry is
// rendered only once a trusted key signed its manifest; unsigned, or
// signed by another key, it fails naming the chart, its digest and why.
func TestVerifyOCICharts(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	key, other, keys := artifacttest.NewKeys(t)
	release := func(version string) map[string]string { return ociRelease(reg.Host, version) }
	versioned := func(version string) []byte { return ociChart(t, version) }
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

// TestVerifyOCIChartsKeyless: a chart signed keylessly by the trusted
// identity is rendered; by another, it fails naming who signed.
func TestVerifyOCIChartsKeyless(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	sigstore := artifacttest.NewSigstore(t)
	const issuer, workflow = "https://token.actions.example", "https://git.example/charts/web/.github/workflows/release.yaml@refs/tags/1.0.0"
	keys, err := (*artifact.Keys)(nil).WithKeyless(sigstore.TrustedRoot(t), `https://token\.actions\.example`, `https://git\.example/charts/web/.*`)
	if err != nil {
		t.Fatal(err)
	}
	release := func(version string) map[string]string { return ociRelease(reg.Host, version) }
	chart := func(version string) []byte { return ociChart(t, version) }
	signed := reg.PushChart(t, "charts/web", "1.0.0", chart("1.0.0"))
	reg.SignBundleKeyless(t, sigstore, "charts/web", signed, issuer, workflow)
	if out, err := renderTree(t, repoFS(release("1.0.0"), "x", nil), Config{VerifyKeys: keys}); err != nil || len(out.Objects) != 1 {
		t.Fatalf("a chart signed by the trusted identity: %v", err)
	}
	other := "https://git.example/charts/other/.github/workflows/release.yaml@refs/tags/1.1.0"
	byOther := reg.PushChart(t, "charts/web", "1.1.0", chart("1.1.0"))
	reg.SignKeyless(t, sigstore, "charts/web", byOther, issuer, other)
	_, err = renderTree(t, repoFS(release("1.1.0"), "x", nil), Config{VerifyKeys: keys})
	mustFail(t, err, byOther, "signed keylessly by "+other)
}

// ociRelease is a commit releasing chart web at version from the OCI
// registry on host.
func ociRelease(host, version string) map[string]string {
	return map[string]string{"web.yaml": fmt.Sprintf("apiVersion: plimsoll.dev/v1\nkind: HelmChart\nmetadata: {name: web}\nspec:\n  repo: oci://%s/charts\n  chart: web\n  version: %s\n  plainHTTP: true\n", host, version)}
}

// ociChart is chart web at version: one ConfigMap.
func ociChart(t *testing.T, version string) []byte {
	return helmtest.Chart(t, "web", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: " + version + "\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
	})
}
