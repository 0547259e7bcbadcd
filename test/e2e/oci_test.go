//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// ociSteps turns examples/canary's steps into ones without pauses, so that
// a new artifact's canary runs to its end unattended.
const ociSteps = `plimsoll.dev/steps: "50%, 100%"`

// ociLayer is examples/canary at image api:<version>, with a ConfigMap
// naming the version, as a gzip tarball: the layer `flux push artifact`
// makes of the directory.
func ociLayer(t *testing.T, version string) []byte {
	t.Helper()
	files := canaryExample(t, version, `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, ociSteps)
	files["config.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: release}\ndata: {version: " + version + "}\n"
	var entries []helmtest.Entry
	for _, name := range slices.Sorted(maps.Keys(files)) {
		entries = append(entries, helmtest.Entry{Name: name, Body: files[name]})
	}
	return helmtest.Archive(t, entries...)
}

// TestOCIArtifact follows a tag of an OCI artifact in a registry on
// 127.0.0.1, pushed in Flux's layout, with --oci-verify-key: the artifact
// signed in cosign's classic layout is applied, its digest in the sync
// status and on the Deployment; polls of the unchanged tag download
// nothing; a new digest under the tag, signed as a sigstore bundle, rolls
// the Deployment by canary; an unsigned artifact and one signed by
// another key are each refused naming their digest, the last good one
// running.
func TestOCIArtifact(t *testing.T) {
	parallel(t)
	reg := artifacttest.NewRegistry(t)
	key, pub := artifacttest.NewKey(t)
	other, _ := artifacttest.NewKey(t)
	keyFile := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(keyFile, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	// push pushes version, signed by signer (nil: unsigned) in cosign's
	// classic layout, or as a sigstore bundle with bundled.
	push := func(version string, signer *ecdsa.PrivateKey, bundled bool) string {
		d := reg.Push(t, "team/app", "stable", artifacttest.MediaTypeFluxContent, ociLayer(t, version),
			map[string]string{"org.opencontainers.image.revision": version + "@sha1:" + strings.Repeat("0", 40)})
		switch {
		case signer != nil && bundled:
			reg.SignBundle(t, "team/app", d, signer)
		case signer != nil:
			reg.Sign(t, "team/app", d, signer)
		}
		return d
	}

	s := newSyncTarget(t)
	s.oci = []string{"--oci-repository", reg.URL("team/app"), "--oci-tag", "stable", "--oci-plain-http", "--oci-verify-key", keyFile}
	v1 := push("v1", key, false)
	d := kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. the signed artifact is applied: its digest in the sync status and on the Deployment")
	s.waitForCommit(t, v1)
	dep := waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	if got := dep.Annotations["plimsoll.dev/commit"]; got != v1 {
		t.Errorf("Deployment api commit annotation %q, want the digest %s", got, v1)
	}
	checkRelease(t, s.ns, "v1")

	t.Log("2. an unchanged tag is polled without a download")
	waitForQuietPolls(t, d, 1)
	blobs := reg.BlobGets()
	waitForQuietPolls(t, d, 3)
	if got := reg.BlobGets(); got != blobs {
		t.Errorf("3 polls of an unchanged tag downloaded %d blobs, want none", got-blobs)
	}

	t.Log("3. a new digest under the tag, signed as cosign 3 does: synced again, the Deployment rolled by canary")
	v2 := push("v2", key, true)
	s.waitForCommit(t, v2)
	dep = waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	if got := dep.Annotations["plimsoll.dev/commit"]; got != v2 {
		t.Errorf("Deployment api commit annotation %q after the canary, want %s", got, v2)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example/api:v2" {
		t.Errorf("Deployment api runs %s, want registry.example/api:v2", img)
	}
	if cause := dep.Annotations["kubernetes.io/change-cause"]; !strings.HasPrefix(cause, revision.Short(v2)+" "+reg.URL("team/app")+":stable from v2@sha1:") {
		t.Errorf("change-cause %q, want the short digest and the artifact's subject", cause)
	}
	if msg := s.status(t)["plimsoll.dev/message"]; !strings.HasPrefix(msg, "applied "+revision.Short(v2)+" ") {
		t.Errorf("status message %q, want it to name %s", msg, revision.Short(v2))
	}
	checkRelease(t, s.ns, "v2")

	t.Log("4. unsigned, then signed by another key: each refused naming its digest, v2 still running")
	for _, c := range []struct {
		version string
		signer  *ecdsa.PrivateKey
		reason  string
	}{
		{"v3", nil, "carries no cosign signature"},
		{"v4", other, "signed by a key the sync does not trust"},
	} {
		checkRefused(t, s, push(c.version, c.signer, true), v2, c.reason)
	}
}

// checkRefused waits for the artifact refused to be refused for reason,
// and checks that it is said in the status and a SyncFailed Event, and
// that running, version v2, is still applied and Healthy.
func checkRefused(t *testing.T, s *syncTarget, refused, running, reason string) {
	t.Helper()
	want := "artifact " + revision.Short(refused) + " not applied (signature check failed; still running " + revision.Short(running) + ")"
	waitFor(t, revision.Short(refused)+" refused", func(ctx context.Context) (bool, error) {
		st := s.status(t)
		return st["plimsoll.dev/fetched-commit"] == refused && strings.Contains(st["plimsoll.dev/message"], want), nil
	})
	st := s.status(t)
	if msg := st["plimsoll.dev/message"]; !strings.Contains(msg, refused) || !strings.Contains(msg, reason) {
		t.Errorf("status message %q, want the digest %s and %q", msg, refused, reason)
	}
	if st["plimsoll.dev/commit"] != running || st["plimsoll.dev/sync-status"] != "Failed" {
		t.Errorf("status commit %s, state %s; want %s still applied, Failed", st["plimsoll.dev/commit"], st["plimsoll.dev/sync-status"], running)
	}
	if !slices.ContainsFunc(eventMessages(s.events(t), "SyncFailed"), func(m string) bool { return strings.Contains(m, refused) }) {
		t.Errorf("no SyncFailed Event names %s", refused)
	}
	checkRelease(t, s.ns, "v2")
	dep := waitForDeployment(t, s.ns, "api", "still revision 2 Healthy", phaseIs(2, "Healthy"))
	if got := dep.Annotations["plimsoll.dev/commit"]; got != running {
		t.Errorf("Deployment api commit annotation %q, want %s still", got, running)
	}
}

// TestOCIKeyless follows a tag of an OCI artifact verified keylessly, as
// a CI's workflow signs with its OIDC identity: offline, against the
// trusted root of a Sigstore instance of the test's own given in a file
// (as the chart mounts it from a ConfigMap), with the issuer and identity
// as expressions. An artifact signed in cosign's classic layout is
// applied, then one signed as a sigstore bundle rolls the Deployment; one
// signed by another workflow and one by another Sigstore's certificate
// are refused naming their digest and signer, the last good one running.
func TestOCIKeyless(t *testing.T) {
	parallel(t)
	reg := artifacttest.NewRegistry(t)
	sigstore, elsewhere := artifacttest.NewSigstore(t), artifacttest.NewSigstore(t)
	rootFile := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(rootFile, sigstore.TrustedRoot(t), 0o600); err != nil {
		t.Fatal(err)
	}
	const (
		issuer   = "https://token.actions.example"
		workflow = "https://git.example/team/app/.github/workflows/release.yaml@refs/heads/main"
	)
	push := func(version string) string {
		return reg.Push(t, "team/app", "stable", artifacttest.MediaTypeFluxContent, ociLayer(t, version), nil)
	}
	s := newSyncTarget(t)
	s.oci = []string{"--oci-repository", reg.URL("team/app"), "--oci-tag", "stable", "--oci-plain-http",
		"--oci-verify-trusted-root", rootFile, "--oci-verify-issuer", `https://token\.actions\.example`,
		"--oci-verify-identity", `https://git\.example/team/app/\.github/workflows/release\.yaml@refs/heads/main`}
	v1 := push("v1")
	reg.SignKeyless(t, sigstore, "team/app", v1, issuer, workflow)
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. signed keylessly in cosign's classic layout: applied")
	s.waitForCommit(t, v1)
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	checkRelease(t, s.ns, "v1")

	t.Log("2. signed keylessly as a sigstore bundle: the Deployment rolled")
	v2 := push("v2")
	reg.SignBundleKeyless(t, sigstore, "team/app", v2, issuer, workflow)
	s.waitForCommit(t, v2)
	dep := waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example/api:v2" {
		t.Errorf("Deployment api runs %s, want registry.example/api:v2", img)
	}
	checkRelease(t, s.ns, "v2")

	t.Log("3. by another workflow, then by another Sigstore's certificate: each refused, v2 still running")
	other := "https://git.example/team/app/.github/workflows/debug.yaml@refs/heads/main"
	v3 := push("v3")
	reg.SignBundleKeyless(t, sigstore, "team/app", v3, issuer, other)
	checkRefused(t, s, v3, v2, "signed keylessly by "+other+" (issuer "+issuer+"), not by an identity the sync trusts")
	v4 := push("v4")
	reg.SignKeyless(t, elsewhere, "team/app", v4, issuer, workflow)
	checkRefused(t, s, v4, v2, "does not verify against the trusted root")
}

// checkRelease checks the artifact's ConfigMap names version.
func checkRelease(t *testing.T, ns, version string) {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "release", metav1.GetOptions{})
	if err != nil || cm.Data["version"] != version {
		t.Errorf("ConfigMap release: %v, %v; want version %s", cm.Data, err, version)
	}
}
