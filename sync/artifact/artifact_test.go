package artifact_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/artifact/artifacttest"
	"plimsoll.dev/plimsoll/sync/helm/helmtest"
	"plimsoll.dev/plimsoll/sync/source"
)

const deployYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {v: \"1\"}\n"

// newSource is a Source of repo in reg, by tag latest, with keys.
func newSource(t *testing.T, reg *artifacttest.Registry, repo string, keys *artifact.Keys) *artifact.Source {
	t.Helper()
	ref, err := artifact.ParseRef(reg.URL(repo), "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := artifact.New(artifact.Config{Ref: ref, PlainHTTP: true, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// poll is a sync's poll: Head, Fetch, Snapshot.
func poll(t *testing.T, s *artifact.Source) (string, *source.Snapshot, error) {
	t.Helper()
	ctx := context.Background()
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if err := s.Fetch(ctx, head); err != nil {
		t.Fatalf("Fetch %s: %v", head, err)
	}
	snap, err := s.Snapshot(ctx, head)
	return head, snap, err
}

func TestFluxArtifactByTag(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	layer := helmtest.Archive(t, helmtest.Entry{Name: "deploy/app.yaml", Body: deployYAML}, helmtest.Entry{Name: "./README.md", Body: "x"})
	d1 := reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent, layer, map[string]string{
		"org.opencontainers.image.revision": "main@sha1:0123abc", "org.opencontainers.image.source": "https://git.example/app",
		"org.opencontainers.image.created": "2026-01-02T03:04:05Z"})
	s := newSource(t, reg, "app", nil)
	head, snap, err := poll(t, s)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if head != d1 || snap.Commit.Hash != d1 {
		t.Fatalf("head %s, snapshot %s: want the pushed digest %s", head, snap.Commit.Hash, d1)
	}
	wantSubject := reg.URL("app") + ":latest from main@sha1:0123abc of https://git.example/app"
	if snap.Commit.Subject != wantSubject || snap.Commit.Time.Year() != 2026 {
		t.Errorf("commit %+v: want subject %q and the creation time", snap.Commit, wantSubject)
	}
	data, err := fs.ReadFile(snap.FS, "deploy/app.yaml")
	if err != nil || string(data) != deployYAML {
		t.Fatalf("deploy/app.yaml: %q, %v", data, err)
	}
	entries, err := fs.ReadDir(snap.FS, ".")
	if err != nil || len(entries) != 2 || entries[0].Name() != "README.md" || !entries[1].IsDir() {
		t.Fatalf("root: %v, %v; want README.md and deploy/", entries, err)
	}

	// An unchanged tag: one HEAD, no download.
	before := reg.BlobGets()
	if _, _, err := poll(t, s); err != nil {
		t.Fatal(err)
	}
	if got := reg.BlobGets(); got != before {
		t.Errorf("an unchanged tag downloaded %d blobs", got-before)
	}

	// A new digest under the same tag, as oras pushes a directory.
	layer2 := helmtest.Archive(t, helmtest.Entry{Name: "manifests/app.yaml", Body: strings.Replace(deployYAML, `"1"`, `"2"`, 1)})
	d2 := reg.Push(t, "app", "latest", artifacttest.MediaTypeOrasLayer, layer2, nil)
	head, snap, err = poll(t, s)
	if err != nil || head != d2 {
		t.Fatalf("after a new push: head %s, %v; want %s", head, err, d2)
	}
	if _, err := fs.Stat(snap.FS, "manifests/app.yaml"); err != nil {
		t.Errorf("oras layer: %v", err)
	}
}

func TestSemverAndDigest(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	layer := helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Body: deployYAML})
	var digests = map[string]string{}
	for _, tag := range []string{"1.0.0", "1.2.0", "v1.3.1", "2.0.0", "1.4.0-rc.1", "not-semver"} {
		digests[tag] = reg.Push(t, "app", tag, artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Body: deployYAML + "# " + tag + "\n"}), nil)
	}
	ref, err := artifact.ParseRef(reg.URL("app"), "", ">=1.0.0 <2.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := artifact.New(artifact.Config{Ref: ref, PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if head, err := s.Head(context.Background()); err != nil || head != digests["v1.3.1"] {
		t.Errorf("semver head %s, %v: want v1.3.1's %s", head, err, digests["v1.3.1"])
	}
	pinned := reg.Push(t, "app", "pinned", artifacttest.MediaTypeFluxContent, layer, nil)
	ref, err = artifact.ParseRef(reg.URL("app"), "", "", pinned)
	if err != nil {
		t.Fatal(err)
	}
	s, err = artifact.New(artifact.Config{Ref: ref, PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if head, _, err := poll(t, s); err != nil || head != pinned {
		t.Errorf("digest head %s, %v: want %s", head, err, pinned)
	}
	ref, _ = artifact.ParseRef(reg.URL("app"), "", ">=3.0.0", "")
	s, _ = artifact.New(artifact.Config{Ref: ref, PlainHTTP: true})
	if _, err := s.Head(context.Background()); err == nil || !strings.Contains(err.Error(), `no tag in semver range ">=3.0.0"`) {
		t.Errorf("empty range: %v", err)
	}
	ref, _ = artifact.ParseRef(reg.URL("app"), "gone", "", "")
	s, _ = artifact.New(artifact.Config{Ref: ref, PlainHTTP: true})
	if _, err := s.Head(context.Background()); err == nil || !strings.Contains(err.Error(), "has no tag gone") {
		t.Errorf("missing tag: %v", err)
	}
}

// refused fails the test unless err is the signature check's refusal of
// digest for reason.
func refused(t *testing.T, err error, digest, reason string) {
	t.Helper()
	if !errors.Is(err, source.ErrUnverified) || !strings.Contains(err.Error(), digest) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("error %v; want the refusal of %s: %s", err, digest, reason)
	}
}

func TestSignatures(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	key, other, keys := artifacttest.NewKeys(t)
	layer := helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Body: deployYAML})
	s := newSource(t, reg, "app", keys)

	unsigned := reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent, layer, nil)
	_, _, err := poll(t, s)
	refused(t, err, unsigned, "carries no cosign signature")
	// Signed later: the next poll sees the signature, without the layer again.
	before := reg.BlobGets()
	reg.Sign(t, "app", unsigned, key)
	if _, snap, err := poll(t, s); err != nil || snap.Commit.Hash != unsigned {
		t.Fatalf("signed later: %v", err)
	}
	if got := reg.BlobGets() - before; got != 1 {
		t.Errorf("checking a new signature downloaded %d blobs, want 1 (its payload)", got)
	}

	byOther := reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "b.yaml", Body: deployYAML}), nil)
	reg.Sign(t, "app", byOther, other)
	_, _, err = poll(t, s)
	refused(t, err, byOther, "signed by a key the sync does not trust")

	// A trusted key's signature of another artifact, copied over.
	copied := reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "c.yaml", Body: deployYAML}), nil)
	reg.SignPayload(t, "app", copied, key, artifacttest.Payload(reg.Host+"/app", unsigned))
	_, _, err = poll(t, s)
	refused(t, err, copied, "signed another artifact, "+unsigned)
}

func TestRefusedArtifacts(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	s := newSource(t, reg, "app", nil)
	for _, c := range []struct {
		name, layerType string
		layer           []byte
		want            string
	}{
		{"symlink", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Link: "/etc/passwd"}), "tarball entry a.yaml is a link (to /etc/passwd)"},
		{"escape", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "../a.yaml", Body: deployYAML}), `tarball entry "../a.yaml" leaves the artifact's root`},
		{"not a tarball", artifacttest.MediaTypeFluxContent, []byte("plain"), "ungzip the layer"},
		{"no manifests layer", "application/vnd.example.other", []byte("x"), "has no layer of manifests"},
	} {
		d := reg.Push(t, "app", "latest", c.layerType, c.layer, nil)
		_, _, err := poll(t, s)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), d) {
			t.Errorf("%s: %v; want %q naming %s", c.name, err, c.want, d)
		}
	}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct{ url, tag, semver, digest, want string }{
		{"https://ghcr.io/x", "", "", "", "want oci://host[:port]/path"},
		{"oci://ghcr.io/x:v1", "", "", "", "names a tag or digest in the URL"},
		{"oci://ghcr.io/x", "v1", ">=1", "", "give one of an OCI tag, semver range and digest"},
		{"oci://ghcr.io/x", "", ">=1 <<2", "", `semver range ">=1 <<2"`},
		{"oci://ghcr.io/x", "", "", "sha256:abc", `OCI digest "sha256:abc"`},
		{"oci://ghcr.io/x", "bad tag", "", "", `OCI tag "bad tag" is not a tag`},
		{"oci://", "", "", "", `OCI repository "oci://"`},
	} {
		if _, err := artifact.ParseRef(c.url, c.tag, c.semver, c.digest); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRef(%q, %q, %q, %q) = %v; want %q", c.url, c.tag, c.semver, c.digest, err, c.want)
		}
	}
	ref, err := artifact.ParseRef("oci://ghcr.io/team/app/", "", "", "")
	if err != nil || ref.Tag != "latest" || ref.String() != "oci://ghcr.io/team/app:latest" {
		t.Errorf("default: %+v %v", ref, err)
	}
}

func TestReadKeys(t *testing.T) {
	_, pub := artifacttest.NewKey(t)
	_, pub2 := artifacttest.NewKey(t)
	both, err := artifact.ReadKeys(append(append([]byte{}, pub...), pub2...))
	if err != nil || both.Len() != 2 {
		t.Fatalf("two keys: %v", err)
	}
	swapped, _ := artifact.ReadKeys(append(append([]byte{}, pub2...), pub...))
	if both.ID() != swapped.ID() {
		t.Error("the same keys in another order have another ID")
	}
	for _, c := range []struct{ text, want string }{
		{"", "no PEM public key found"},
		{"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n", "is a private key"},
		{"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "is a CERTIFICATE, not a PUBLIC KEY"},
		{"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "not a public key"},
	} {
		if _, err := artifact.ReadKeys([]byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadKeys(%q) = %v; want %q", c.text, err, c.want)
		}
	}
}

// TestBundleSignatures: cosign 3's signatures, sigstore bundles referring
// to the artifact, count as its classic ones do.
func TestBundleSignatures(t *testing.T) {
	reg := artifacttest.NewRegistry(t)
	key, other, keys := artifacttest.NewKeys(t)
	s := newSource(t, reg, "app", keys)
	signed := reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "a.yaml", Body: deployYAML}), nil)
	reg.SignBundle(t, "app", signed, key)
	if _, snap, err := poll(t, s); err != nil || snap.Commit.Hash != signed {
		t.Fatalf("an artifact with a bundle by a trusted key: %v", err)
	}
	byOther := reg.Push(t, "app", "latest", artifacttest.MediaTypeFluxContent, helmtest.Archive(t, helmtest.Entry{Name: "b.yaml", Body: deployYAML}), nil)
	reg.SignBundle(t, "app", byOther, other)
	_, _, err := poll(t, s)
	refused(t, err, byOther, "signed by a key the sync does not trust")
	// Another key's bundle beside a trusted key's classic signature: the
	// classic one holds.
	reg.Sign(t, "app", byOther, key)
	if _, _, err := poll(t, s); err != nil {
		t.Errorf("a classic signature beside another key's bundle: %v", err)
	}
}
