package artifacttest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
)

// Sigstore is a Sigstore instance of its own, in memory (sigstore-go's
// virtual one): a Fulcio certificate authority, a Rekor log and a
// timestamp authority. It signs artifacts keylessly as `cosign sign`
// does with an OIDC identity, and gives the trusted root that verifies
// them offline.
type Sigstore struct {
	vs *ca.VirtualSigstore
}

// NewSigstore starts a Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{vs: vs}
}

// TrustedRoot is the instance's trusted_root.json: its certificate
// authority, transparency log and timestamp authority, no CT log (its
// certificates carry no SCT).
func (s *Sigstore) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	logs := map[string]*root.TransparencyLog{}
	for id, l := range s.vs.RekorLogs() {
		// The virtual instance keys its log by the hex of the log ID;
		// the trusted root holds the ID's bytes.
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		logs[id] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.vs.FulcioCertificateAuthorities(), nil, s.vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	text, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// SignKeyless signs artifact digest of repo as `cosign sign` (cosign 2,
// or 3 with --new-bundle-format=false) does with an OIDC identity of
// issuer: a Fulcio certificate for identity, the signature's Rekor entry
// and its signed entry timestamp, all in annotations of the classic
// layout's signature layer.
func (r *Registry) SignKeyless(t testing.TB, s *Sigstore, repo, digest, issuer, identity string) {
	t.Helper()
	payload := Payload(r.Host+"/"+repo, digest)
	e, err := s.vs.Sign(identity, issuer, payload)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := e.SignatureContent()
	sig := content.(*sgbundle.MessageSignature).Signature()
	cert := certificateOf(t, e)
	entry := tlogEntry(t, e)
	logID := hex.EncodeToString(entry.LogId.KeyId)
	body := base64.StdEncoding.EncodeToString(entry.CanonicalizedBody)
	set, err := s.vs.RekorSignPayload(tlog.RekorPayload{Body: body, IntegratedTime: entry.IntegratedTime, LogIndex: entry.LogIndex, LogID: logID})
	if err != nil {
		t.Fatal(err)
	}
	record, _ := json.Marshal(map[string]any{
		"SignedEntryTimestamp": set,
		"Payload":              map[string]any{"body": body, "integratedTime": entry.IntegratedTime, "logIndex": entry.LogIndex, "logID": logID},
	})
	r.pushSignature(t, repo, digest, payload, map[string]string{
		annotationSignature:               base64.StdEncoding.EncodeToString(sig),
		"dev.sigstore.cosign/certificate": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})),
		"dev.sigstore.cosign/bundle":      string(record),
	})
}

// SignBundleKeyless signs artifact digest of repo as cosign 3 does by
// default with an OIDC identity of issuer: a sigstore bundle (v0.3) of a
// DSSE envelope of the in-toto statement naming digest, with the Fulcio
// certificate for identity, the Rekor entry's inclusion proof and an
// RFC 3161 timestamp, pushed as an OCI 1.1 referrer of the artifact.
func (r *Registry) SignBundleKeyless(t testing.TB, s *Sigstore, repo, digest, issuer, identity string) {
	t.Helper()
	r.SignBundleKeylessOf(t, s, repo, digest, digest, issuer, identity)
}

// SignBundleKeylessOf is SignBundleKeyless of a statement naming signed,
// pushed as a referrer of digest: another artifact's signature copied.
func (r *Registry) SignBundleKeylessOf(t testing.TB, s *Sigstore, repo, digest, signed, issuer, identity string) {
	t.Helper()
	e, err := s.vs.AttestAtTime(identity, issuer, signStatement(signed), time.Now().Add(5*time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := e.SignatureContent()
	env := content.(*sgbundle.Envelope).RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var sigs []*protodsse.Signature
	for _, s := range env.Signatures {
		raw, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, &protodsse.Signature{Sig: raw, Keyid: s.KeyID})
	}
	stamps, _ := e.Timestamps()
	var rfc3161 []*protocommon.RFC3161SignedTimestamp
	for _, ts := range stamps {
		rfc3161 = append(rfc3161, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	b := &protobundle.Bundle{
		MediaType: mediaTypeBundle,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: certificateOf(t, e)}},
			TlogEntries:               []*protorekor.TransparencyLogEntry{tlogEntry(t, e)},
			TimestampVerificationData: &protobundle.TimestampVerificationData{Rfc3161Timestamps: rfc3161},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType, Signatures: sigs}},
	}
	text, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	r.pushBundle(t, repo, digest, text)
}

// certificateOf is the DER of the Fulcio certificate e was signed with.
func certificateOf(t testing.TB, e *ca.TestEntity) []byte {
	t.Helper()
	vc, err := e.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		t.Fatalf("the signature's certificate: %v", err)
	}
	return vc.Certificate().Raw
}

// tlogEntry is the Rekor entry of e, with the kind its body names.
func tlogEntry(t testing.TB, e *ca.TestEntity) *protorekor.TransparencyLogEntry {
	t.Helper()
	entries, err := e.TlogEntries()
	if err != nil || len(entries) != 1 {
		t.Fatalf("the signature's log entries: %d, %v", len(entries), err)
	}
	tle := entries[0].TransparencyLogEntry()
	var kind struct{ Kind, APIVersion string }
	if err := json.Unmarshal(tle.CanonicalizedBody, &kind); err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion}
	return tle
}
