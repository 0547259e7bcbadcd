package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// What a keyless signature in cosign's classic layout carries beside the
// signature annotation: the Fulcio certificate, and the transparency log's
// promise to include the entry (its signed entry timestamp).
const (
	annotationCertificate = "dev.sigstore.cosign/certificate"
	annotationRekorBundle = "dev.sigstore.cosign/bundle"
	// mediaTypeBundleV01 is the bundle version whose tlog entries hold an
	// inclusion promise, not a proof: what a classic signature has.
	mediaTypeBundleV01 = "application/vnd.dev.sigstore.bundle+json;version=0.1"
)

// rekorBundle is cosign's record of a Rekor entry, in the annotation
// dev.sigstore.cosign/bundle.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// entryKind is the part of a Rekor entry's body that names its type.
type entryKind struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// classicBundle turns a keyless signature in cosign's classic layout
// (the signature sig of payload, the certificate and Rekor record in
// annotations) into the sigstore bundle it is equivalent to, so that one
// verifier checks both layouts. An error says what is missing.
func classicBundle(annotations map[string]string, payload, sig []byte) (*sgbundle.Bundle, error) {
	block, _ := pem.Decode([]byte(annotations[annotationCertificate]))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("annotation %s holds no PEM certificate", annotationCertificate)
	}
	text, ok := annotations[annotationRekorBundle]
	if !ok {
		return nil, fmt.Errorf("it has no transparency log entry (no %s annotation: signed with --tlog-upload=false?)", annotationRekorBundle)
	}
	var rb rekorBundle
	if err := json.Unmarshal([]byte(text), &rb); err != nil {
		return nil, fmt.Errorf("annotation %s does not parse: %w", annotationRekorBundle, err)
	}
	body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: the entry's body is not base64", annotationRekorBundle)
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil || len(rb.SignedEntryTimestamp) == 0 {
		return nil, fmt.Errorf("annotation %s: no log ID or signed entry timestamp", annotationRekorBundle)
	}
	var kind entryKind
	if err := json.Unmarshal(body, &kind); err != nil || kind.Kind == "" {
		return nil, errors.New("the transparency log entry's body names no kind")
	}
	sum := sha256.Sum256(payload)
	b, err := sgbundle.NewBundle(&protobundle.Bundle{
		MediaType: mediaTypeBundleV01,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
				Certificates: []*protocommon.X509Certificate{{RawBytes: block.Bytes}}}},
			TlogEntries: []*protorekor.TransparencyLogEntry{{
				LogIndex:          rb.Payload.LogIndex,
				LogId:             &protocommon.LogId{KeyId: logID},
				KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
				IntegratedTime:    rb.Payload.IntegratedTime,
				InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
				CanonicalizedBody: body,
			}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     sig,
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("the signature and its transparency log entry do not make a sigstore bundle: %w", err)
	}
	return b, nil
}

// checkClassicKeyless checks a keyless signature sig of payload in
// cosign's classic layout: "" when the trusted identity made it. That
// the payload names the artifact is the caller's check.
func (v *verifier) checkClassicKeyless(annotations map[string]string, payload, sig []byte) string {
	if v.keys.keyless == nil {
		return unkeyed
	}
	b, err := classicBundle(annotations, payload, sig)
	if err != nil {
		return "keyless signature: " + err.Error()
	}
	return v.keys.keyless.check(b, verify.WithArtifact(bytes.NewReader(payload)))
}
