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
		refused := push(c.version, c.signer, true)
		want := "artifact " + revision.Short(refused) + " not applied (signature check failed; still running " + revision.Short(v2) + ")"
		waitFor(t, c.version+" refused", func(ctx context.Context) (bool, error) {
			st := s.status(t)
			return st["plimsoll.dev/fetched-commit"] == refused && strings.Contains(st["plimsoll.dev/message"], want), nil
		})
		st := s.status(t)
		if msg := st["plimsoll.dev/message"]; !strings.Contains(msg, refused) || !strings.Contains(msg, c.reason) {
			t.Errorf("%s: status message %q, want the digest %s and %q", c.version, msg, refused, c.reason)
		}
		if st["plimsoll.dev/commit"] != v2 || st["plimsoll.dev/sync-status"] != "Failed" {
			t.Errorf("%s: status commit %s, state %s; want %s still applied, Failed", c.version, st["plimsoll.dev/commit"], st["plimsoll.dev/sync-status"], v2)
		}
		if !slices.ContainsFunc(eventMessages(s.events(t), "SyncFailed"), func(m string) bool { return strings.Contains(m, refused) }) {
			t.Errorf("%s: no SyncFailed Event names %s", c.version, refused)
		}
		checkRelease(t, s.ns, "v2")
		dep = waitForDeployment(t, s.ns, "api", "still revision 2 Healthy", phaseIs(2, "Healthy"))
		if got := dep.Annotations["plimsoll.dev/commit"]; got != v2 {
			t.Errorf("%s: Deployment api commit annotation %q, want %s still", c.version, got, v2)
		}
	}
}

// checkRelease checks the artifact's ConfigMap names version.
func checkRelease(t *testing.T, ns, version string) {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "release", metav1.GetOptions{})
	if err != nil || cm.Data["version"] != version {
		t.Errorf("ConfigMap release: %v, %v; want version %s", cm.Data, err, version)
	}
}
