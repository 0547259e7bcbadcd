package artifact

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"plimsoll.dev/plimsoll/sync/source"
)

// What cosign's classic signatures are made of: a manifest tagged
// sha256-<hex>.sig beside the artifact, each layer a simple-signing
// payload with its signature in an annotation.
const (
	annotationSignature = "dev.cosignproject.cosign/signature"
	mediaTypeSimpleSign = "application/vnd.dev.cosign.simplesigning.v1+json"
	simpleSigningType   = "cosign container image signature"
	signatureTagSuffix  = ".sig"
	// maxSignatures bounds the signature layers read for one artifact.
	maxSignatures = 16
	// maxPayloadBytes bounds a simple-signing payload (a few hundred
	// bytes) and maxSignatureManifestBytes its manifest.
	maxPayloadBytes           = 64 << 10
	maxSignatureManifestBytes = 256 << 10
)

// payload is the part of a simple-signing payload the check reads.
type payload struct {
	Critical struct {
		Image struct {
			Digest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// signatureTag is the tag cosign keeps the signatures of digest under.
func signatureTag(digest string) string {
	return strings.Replace(digest, ":", "-", 1) + signatureTagSuffix
}

// verifier checks the cosign signatures of the manifests of one
// registry repository against keys.
type verifier struct {
	repo *remote.Repository
	keys *Keys
	// name is the repository as errors name it.
	name string
}

// Verify checks that manifest digest of repository repo (named name in
// errors) carries a cosign signature by one of keys, as a Source checks
// its artifacts: in cosign's classic layout or as a sigstore bundle. Its
// error wraps source.ErrUnverified, naming the digest and the reason,
// when the manifest is unsigned or no signature holds; another error
// means the registry could not be read.
func Verify(ctx context.Context, repo *remote.Repository, name, digest string, keys *Keys) error {
	return (&verifier{repo: repo, keys: keys, name: name}).verify(ctx, digest)
}

// verify checks that artifact digest carries a cosign signature by one of
// the keys: in cosign's classic layout (a sha256-<hex>.sig tag) or as a
// sigstore bundle referring to it (cosign 3's). It returns an error
// wrapping source.ErrUnverified with the reason when the artifact is
// unsigned or no signature holds, and another error when the registry
// could not be read.
func (v *verifier) verify(ctx context.Context, digest string) error {
	ok, reasons, err := v.verifyClassic(ctx, digest)
	if ok || err != nil {
		return err
	}
	ok, more, err := v.verifyBundles(ctx, digest)
	if ok || err != nil {
		return err
	}
	if reasons = append(reasons, more...); len(reasons) == 0 {
		return v.unverified(digest, "it carries no cosign signature (no tag %s, no sigstore bundle referring to it)", signatureTag(digest))
	}
	return v.unverified(digest, "no signature holds: %s", strings.Join(reasons, "; "))
}

// verifyClassic checks the classic signatures of artifact digest, in its
// own repository: whether one is by a trusted key, else why each is not
// (no reason when there is no signature tag); an error when the registry
// could not be read.
func (v *verifier) verifyClassic(ctx context.Context, digest string) (bool, []string, error) {
	tag := signatureTag(digest)
	desc, rc, err := v.repo.FetchReference(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("read the signatures of artifact %s (tag %s): %w", digest, tag, err)
	}
	defer rc.Close()
	if desc.Size > maxSignatureManifestBytes {
		return false, []string{fmt.Sprintf("signature manifest %s holds %d bytes, more than the limit of %d", tag, desc.Size, maxSignatureManifestBytes)}, nil
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return false, nil, fmt.Errorf("read the signatures of artifact %s (tag %s): %w", digest, tag, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return false, []string{fmt.Sprintf("signature manifest %s does not parse: %v", tag, err)}, nil
	}
	var reasons []string
	for i, layer := range m.Layers {
		if i == maxSignatures {
			reasons = append(reasons, fmt.Sprintf("%d more signatures not read", len(m.Layers)-i))
			break
		}
		reason, err := v.checkSignature(ctx, digest, layer)
		if err != nil || reason == "" {
			return err == nil, nil, err
		}
		reasons = append(reasons, reason)
	}
	if len(reasons) == 0 {
		reasons = append(reasons, fmt.Sprintf("signature manifest %s holds no signature", tag))
	}
	return false, reasons, nil
}

// checkSignature checks one signature layer of artifact digest: "" when it
// is a signature of digest by a trusted key or keyless identity, else why
// not.
func (v *verifier) checkSignature(ctx context.Context, digest string, layer ocispec.Descriptor) (string, error) {
	encoded, ok := layer.Annotations[annotationSignature]
	switch {
	case layer.MediaType != mediaTypeSimpleSign:
		return fmt.Sprintf("layer %s is a %s, not a simple-signing payload", layer.Digest, layer.MediaType), nil
	case !ok:
		return fmt.Sprintf("layer %s has no %s annotation", layer.Digest, annotationSignature), nil
	case layer.Size > maxPayloadBytes:
		return fmt.Sprintf("payload %s holds %d bytes, more than the limit of %d", layer.Digest, layer.Size, maxPayloadBytes), nil
	}
	sig, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return fmt.Sprintf("the signature of payload %s is not base64", layer.Digest), nil
	}
	rc, err := v.repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		return "", fmt.Errorf("read signature payload %s of artifact %s: %w", layer.Digest, digest, err)
	}
	defer rc.Close()
	body, err := content.ReadAll(rc, layer)
	if err != nil {
		return "", fmt.Errorf("read signature payload %s of artifact %s: %w", layer.Digest, digest, err)
	}
	if _, keyless := layer.Annotations[annotationCertificate]; keyless {
		if reason := v.checkClassicKeyless(layer.Annotations, body, sig); reason != "" {
			return reason, nil
		}
	} else if !v.keys.verifies(body, sig) {
		return "signed by a key the sync does not trust", nil
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Sprintf("payload %s does not parse: %v", layer.Digest, err), nil
	}
	switch {
	case p.Critical.Type != simpleSigningType:
		return fmt.Sprintf("payload %s is of type %q, not %q", layer.Digest, p.Critical.Type, simpleSigningType), nil
	case p.Critical.Image.Digest != digest:
		return fmt.Sprintf("a trusted signer signed another artifact, %s, not this one", p.Critical.Image.Digest), nil
	}
	return "", nil
}

// unverified is the refusal of artifact digest, for reason.
func (v *verifier) unverified(digest, format string, args ...any) error {
	return &unverifiedError{msg: fmt.Sprintf("artifact %s of %s is not signed by a trusted key: %s", digest, v.name, fmt.Sprintf(format, args...))}
}

// unverifiedError is an artifact refused by its signature check; it is
// source.ErrUnverified, so that the sync reports it as a Git commit's.
type unverifiedError struct{ msg string }

func (e *unverifiedError) Error() string { return e.msg }

// Is makes errors.Is(err, source.ErrUnverified) hold.
func (e *unverifiedError) Is(target error) bool { return target == source.ErrUnverified }
