package artifact

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// What cosign 3's signatures are made of (`cosign sign
// --new-bundle-format`, its default): an OCI 1.1 referrer of the
// artifact whose one layer is a sigstore bundle, holding a DSSE envelope
// of an in-toto statement naming the artifact's digest.
const (
	// mediaTypeBundlePrefix starts the media type of every version of a
	// sigstore bundle ("application/vnd.dev.sigstore.bundle.v0.3+json").
	mediaTypeBundlePrefix = "application/vnd.dev.sigstore.bundle"
	payloadTypeInToto     = "application/vnd.in-toto+json"
	predicateCosignSign   = "https://sigstore.dev/cosign/sign/v1"
	// maxBundleBytes bounds a bundle (a few kilobytes, with its
	// transparency log entry).
	maxBundleBytes = 256 << 10
)

// bundle is the part of a sigstore bundle the check of a key's signature
// reads; one with a certificate is keyless, and checked by sigstore-go.
type bundle struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial struct {
		Certificate          json.RawMessage `json:"certificate"`
		X509CertificateChain json.RawMessage `json:"x509CertificateChain"`
	} `json:"verificationMaterial"`
	DSSEEnvelope *struct {
		Payload     string          `json:"payload"`
		PayloadType string          `json:"payloadType"`
		Signatures  []dsseSignature `json:"signatures"`
	} `json:"dsseEnvelope"`
}

// dsseSignature is one signature of a DSSE envelope.
type dsseSignature struct {
	Sig string `json:"sig"`
}

// statement is the part of an in-toto statement the check reads.
type statement struct {
	Subject []struct {
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
	PredicateType string `json:"predicateType"`
}

// verifyBundles checks the sigstore bundles that refer to artifact
// digest: whether one is a signature of it by a trusted key, else why each
// is not (no reason when there is no bundle at all); an error when the
// registry could not be read.
func (v *verifier) verifyBundles(ctx context.Context, digest string) (bool, []string, error) {
	var referrers []ocispec.Descriptor
	subject := ocispec.Descriptor{Digest: godigest.Digest(digest), MediaType: ocispec.MediaTypeImageManifest}
	err := v.repo.Referrers(ctx, subject, "", func(page []ocispec.Descriptor) error {
		for _, r := range page {
			if strings.HasPrefix(r.ArtifactType, mediaTypeBundlePrefix) && len(referrers) < maxSignatures {
				referrers = append(referrers, r)
			}
		}
		return nil
	})
	if err != nil {
		return false, nil, fmt.Errorf("list the referrers of artifact %s: %w", digest, err)
	}
	var reasons []string
	for _, r := range referrers {
		reason, err := v.checkBundle(ctx, digest, r)
		if err != nil {
			return false, nil, err
		}
		if reason == "" {
			return true, nil, nil
		}
		reasons = append(reasons, reason)
	}
	return false, reasons, nil
}

// checkBundle checks the bundle of referrer r of artifact digest: "" when
// it is a signature of digest by a trusted key, else why not.
func (v *verifier) checkBundle(ctx context.Context, digest string, r ocispec.Descriptor) (string, error) {
	if r.Size > maxSignatureManifestBytes {
		return fmt.Sprintf("bundle manifest %s holds %d bytes, more than the limit of %d", r.Digest, r.Size, maxSignatureManifestBytes), nil
	}
	raw, err := v.fetchAll(ctx, r, true)
	if err != nil {
		return "", fmt.Errorf("read bundle manifest %s of artifact %s: %w", r.Digest, digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Layers) == 0 {
		return fmt.Sprintf("bundle manifest %s holds no bundle", r.Digest), nil
	}
	layer := m.Layers[0]
	if !strings.HasPrefix(layer.MediaType, mediaTypeBundlePrefix) || layer.Size > maxBundleBytes {
		return fmt.Sprintf("bundle manifest %s: layer %s is not a bundle of at most %d bytes", r.Digest, layer.Digest, maxBundleBytes), nil
	}
	body, err := v.fetchAll(ctx, layer, false)
	if err != nil {
		return "", fmt.Errorf("read bundle %s of artifact %s: %w", layer.Digest, digest, err)
	}
	return v.checkEnvelope(digest, layer.Digest.String(), body), nil
}

// checkEnvelope checks bundle body (named name): "" when its DSSE
// envelope is signed by a trusted key, or it is keyless and made by the
// trusted identity, and its statement names digest.
func (v *verifier) checkEnvelope(digest, name string, body []byte) string {
	var b bundle
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Sprintf("bundle %s does not parse: %v", name, err)
	}
	env := b.DSSEEnvelope
	if env == nil || len(env.Signatures) == 0 {
		return fmt.Sprintf("bundle %s holds no signed DSSE envelope", name)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return fmt.Sprintf("the payload of bundle %s is not base64", name)
	}
	if b.VerificationMaterial.Certificate != nil || b.VerificationMaterial.X509CertificateChain != nil {
		if reason := v.checkKeylessBundle(name, body); reason != "" {
			return reason
		}
	} else if !v.signedByKey(env.PayloadType, payload, env.Signatures) {
		return "signed by a key the sync does not trust"
	}
	var st statement
	if err := json.Unmarshal(payload, &st); err != nil || env.PayloadType != payloadTypeInToto {
		return fmt.Sprintf("bundle %s does not hold an in-toto statement", name)
	}
	if st.PredicateType != predicateCosignSign {
		return fmt.Sprintf("bundle %s is an attestation (%s), not a signature", name, st.PredicateType)
	}
	algo, hex, _ := strings.Cut(digest, ":")
	for _, sub := range st.Subject {
		if sub.Digest[algo] == hex {
			return ""
		}
	}
	return fmt.Sprintf("a trusted signer signed another artifact in bundle %s, not this one", name)
}

// signedByKey reports whether one of sigs, of a DSSE envelope of
// payload, is by a trusted key.
func (v *verifier) signedByKey(payloadType string, payload []byte, sigs []dsseSignature) bool {
	for _, sig := range sigs {
		raw, err := base64.StdEncoding.DecodeString(sig.Sig)
		if err == nil && v.keys.verifies(pae(payloadType, payload), raw) {
			return true
		}
	}
	return false
}

// pae is DSSE's pre-authentication encoding of a payload: what its
// signatures sign.
func pae(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

// fetchAll reads what desc describes, checked against its digest: a
// manifest, or a blob.
func (v *verifier) fetchAll(ctx context.Context, desc ocispec.Descriptor, manifest bool) ([]byte, error) {
	fetch := v.repo.Blobs().Fetch
	if manifest {
		fetch = v.repo.Manifests().Fetch
	}
	rc, err := fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return content.ReadAll(rc, desc)
}
