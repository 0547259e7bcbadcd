// Package artifacttest serves an OCI registry for tests and pushes
// artifacts to it as `flux push artifact` and `oras push` make them,
// signed or not as `cosign sign --key` signs them: in its classic layout
// (a sha256-<hex>.sig tag whose layer is the simple-signing payload), or
// as cosign 3 does by default (a sigstore bundle as an OCI 1.1 referrer);
// and keylessly, by a Sigstore instance of its own (see Sigstore).
package artifacttest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	// The registry keeps what it is given in memory.
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"

	"plimsoll.dev/plimsoll/sync/artifact"
)

// Media types of what is pushed.
const (
	MediaTypeFluxContent = "application/vnd.cncf.flux.content.v1.tar+gzip"
	MediaTypeFluxConfig  = "application/vnd.cncf.flux.config.v1+json"
	MediaTypeOrasLayer   = "application/vnd.oci.image.layer.v1.tar+gzip"
	mediaTypeSimpleSign  = "application/vnd.dev.cosign.simplesigning.v1+json"
	annotationSignature  = "dev.cosignproject.cosign/signature"
	mediaTypeBundle      = "application/vnd.dev.sigstore.bundle.v0.3+json"
)

// Registry is an OCI registry (distribution's, in memory) on 127.0.0.1.
type Registry struct {
	// Host is its host:port.
	Host string
	// blobGets counts the blob downloads it served.
	blobGets atomic.Int64
}

// NewRegistry starts a Registry, stopped when the test ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	cfg := &configuration.Configuration{Storage: configuration.Storage{"inmemory": configuration.Parameters{}}}
	cfg.Log.Level = "error"
	cfg.Log.AccessLog.Disabled = true
	cfg.HTTP.Secret = "artifacttest"
	// The registry logs every request through logrus' standard logger,
	// which its configuration does not reach: silence it, so that a test's
	// output is the test's.
	logrus.SetOutput(io.Discard)
	app := handlers.NewApp(context.Background(), cfg)
	r := &Registry{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			r.blobGets.Add(1)
		}
		app.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// BlobGets is how many blob downloads the registry served so far.
func (r *Registry) BlobGets() int64 { return r.blobGets.Load() }

// URL is the oci:// URL of repository repo.
func (r *Registry) URL(repo string) string { return "oci://" + r.Host + "/" + repo }

// repository is repo of the registry, over plain HTTP.
func (r *Registry) repository(t testing.TB, repo string) *remote.Repository {
	t.Helper()
	rr, err := remote.NewRepository(r.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	rr.PlainHTTP = true
	return rr
}

// Push pushes layer (a gzip tarball, such as helmtest.Archive makes) to
// repo as an artifact tagged tag, with a layer of type layerType
// (MediaTypeFluxContent as Flux pushes, MediaTypeOrasLayer as oras
// does) and Flux's config and annotations; it returns the manifest's
// digest.
func (r *Registry) Push(t testing.TB, repo, tag, layerType string, layer []byte, annotations map[string]string) string {
	t.Helper()
	return r.PushManifest(t, repo, tag, MediaTypeFluxConfig, []byte("{}"), layerType, layer, annotations)
}

// PushChart pushes a Helm chart archive to repo as `helm push` does: its
// config, one chart layer, a manifest tagged with the version. It returns
// the manifest's digest.
func (r *Registry) PushChart(t testing.TB, repo, version string, archive []byte) string {
	t.Helper()
	return r.PushManifest(t, repo, strings.ReplaceAll(version, "+", "_"), "application/vnd.cncf.helm.config.v1+json", []byte(`{"name":"x"}`),
		"application/vnd.cncf.helm.chart.content.v1.tar+gzip", archive, nil)
}

// PushManifest pushes a config and one layer of the given types to repo,
// and a manifest of them with annotations tagged tag; it returns the
// manifest's digest.
func (r *Registry) PushManifest(t testing.TB, repo, tag, configType string, config []byte, layerType string, layer []byte, annotations map[string]string) string {
	t.Helper()
	ctx := context.Background()
	rr := r.repository(t, repo)
	c, err := oras.PushBytes(ctx, rr, configType, config)
	if err != nil {
		t.Fatalf("push the config: %v", err)
	}
	l, err := oras.PushBytes(ctx, rr, layerType, layer)
	if err != nil {
		t.Fatalf("push the layer: %v", err)
	}
	desc, err := oras.PackManifest(ctx, rr, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		ConfigDescriptor: &c, Layers: []ocispec.Descriptor{l}, ManifestAnnotations: annotations})
	if err != nil {
		t.Fatalf("push the manifest: %v", err)
	}
	if err := rr.Tag(ctx, desc, tag); err != nil {
		t.Fatalf("tag %s: %v", tag, err)
	}
	return desc.Digest.String()
}

// NewKey generates a cosign key pair (ECDSA P-256, as
// `cosign generate-key-pair` makes) and returns it with its public key in
// PEM, as cosign.pub holds it.
func NewKey(t testing.TB) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Sign signs artifact digest of repo with key as `cosign sign --key`
// does: a simple-signing payload naming the digest, its ECDSA signature
// in an annotation, under tag sha256-<hex>.sig. Signing it again replaces
// the signature.
func (r *Registry) Sign(t testing.TB, repo, digest string, key *ecdsa.PrivateKey) {
	t.Helper()
	r.SignPayload(t, repo, digest, key, Payload(r.Host+"/"+repo, digest))
}

// Payload is the simple-signing payload cosign signs for digest.
func Payload(reference, digest string) []byte {
	p, _ := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": reference},
			"image":    map[string]string{"docker-manifest-digest": digest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	return p
}

// SignPayload signs payload with key and pushes it as the signature of
// digest in repo, whatever the payload names.
func (r *Registry) SignPayload(t testing.TB, repo, digest string, key *ecdsa.PrivateKey, payload []byte) {
	t.Helper()
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	r.pushSignature(t, repo, digest, payload, map[string]string{annotationSignature: base64.StdEncoding.EncodeToString(sig)})
}

// pushSignature pushes payload, with annotations, as the one signature
// of digest in repo in cosign's classic layout.
func (r *Registry) pushSignature(t testing.TB, repo, digest string, payload []byte, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	rr := r.repository(t, repo)
	layer, err := oras.PushBytes(ctx, rr, mediaTypeSimpleSign, payload)
	if err != nil {
		t.Fatalf("push the signature payload: %v", err)
	}
	layer.Annotations = annotations
	config, err := oras.PushBytes(ctx, rr, ocispec.MediaTypeImageConfig, []byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}`))
	if err != nil {
		t.Fatalf("push the signature config: %v", err)
	}
	desc, err := oras.PackManifest(ctx, rr, oras.PackManifestVersion1_0, "", oras.PackManifestOptions{
		ConfigDescriptor: &config, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatalf("push the signature manifest: %v", err)
	}
	if err := rr.Tag(ctx, desc, strings.Replace(digest, ":", "-", 1)+".sig"); err != nil {
		t.Fatalf("tag the signature: %v", err)
	}
}

// SignBundle signs artifact digest of repo with key as cosign 3 does by
// default (`cosign sign --key`, --new-bundle-format): a DSSE envelope of
// an in-toto statement naming the digest, in a sigstore bundle, pushed as
// an OCI 1.1 referrer of the artifact.
func (r *Registry) SignBundle(t testing.TB, repo, digest string, key *ecdsa.PrivateKey) {
	t.Helper()
	statement := signStatement(digest)
	const payloadType = "application/vnd.in-toto+json"
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(statement), statement)
	sum := sha256.Sum256(pae)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	hint := sha256.Sum256(der)
	bundle, _ := json.Marshal(map[string]any{
		"mediaType":            mediaTypeBundle,
		"verificationMaterial": map[string]any{"publicKey": map[string]string{"hint": base64.StdEncoding.EncodeToString(hint[:])}},
		"dsseEnvelope": map[string]any{"payload": base64.StdEncoding.EncodeToString(statement), "payloadType": payloadType,
			"signatures": []map[string]string{{"sig": base64.StdEncoding.EncodeToString(sig)}}},
	})
	r.pushBundle(t, repo, digest, bundle)
}

// signStatement is the in-toto statement `cosign sign` signs for digest.
func signStatement(digest string) []byte {
	algo, hex, _ := strings.Cut(digest, ":")
	statement, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []map[string]any{{"digest": map[string]string{algo: hex}}},
		"predicateType": "https://sigstore.dev/cosign/sign/v1",
		"predicate":     map[string]any{},
	})
	return statement
}

// pushBundle pushes bundle as an OCI 1.1 referrer of digest in repo.
func (r *Registry) pushBundle(t testing.TB, repo, digest string, bundle []byte) {
	t.Helper()
	ctx := context.Background()
	rr := r.repository(t, repo)
	subject, err := rr.Resolve(ctx, digest)
	if err != nil {
		t.Fatalf("resolve %s: %v", digest, err)
	}
	layer, err := oras.PushBytes(ctx, rr, mediaTypeBundle, bundle)
	if err != nil {
		t.Fatalf("push the bundle: %v", err)
	}
	if _, err := oras.PackManifest(ctx, rr, oras.PackManifestVersion1_1, mediaTypeBundle, oras.PackManifestOptions{
		Subject: &subject, Layers: []ocispec.Descriptor{layer}}); err != nil {
		t.Fatalf("push the bundle's referrer: %v", err)
	}
}

// NewKeys generates a trusted key and another, and returns them with the
// Keys a sync trusting the first reads from its cosign.pub.
func NewKeys(t testing.TB) (trusted, other *ecdsa.PrivateKey, keys *artifact.Keys) {
	t.Helper()
	trusted, pub := NewKey(t)
	other, _ = NewKey(t)
	keys, err := artifact.ReadKeys(pub)
	if err != nil {
		t.Fatal(err)
	}
	return trusted, other, keys
}
