package artifact

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// Parts of a keyless identity a KeylessError names.
const (
	PartTrustedRoot = "trusted root"
	PartIssuer      = "issuer"
	PartIdentity    = "identity"
)

// KeylessError is a keyless identity WithKeyless refuses. Part is the
// part at fault (PartTrustedRoot, PartIssuer, PartIdentity).
type KeylessError struct {
	Part string
	msg  string
}

func (e *KeylessError) Error() string { return e.msg }

func keylessErr(part, format string, args ...any) *KeylessError {
	return &KeylessError{Part: part, msg: fmt.Sprintf(format, args...)}
}

// keyless is the keyless identity a sync trusts: a Fulcio certificate
// chained to the trusted root, its OIDC issuer and subject matching the
// given expressions, its signature in a transparency log of that root.
// Everything is checked offline, from the root the sync was given.
type keyless struct {
	verifier *verify.Verifier
	identity verify.CertificateIdentity
	// issuer and subject are the expressions as given, for reasons.
	issuer, subject string
	// id tells keyless trusts apart: the root's digest and expressions.
	id string
}

// WithKeyless returns keys (nil: none) that also trust keyless
// signatures, as `cosign sign` makes them without --key: by a Fulcio
// certificate chained to trusted root rootJSON (Sigstore's
// trusted_root.json format), whose OIDC issuer matches issuer and whose
// subject (an e-mail address or a URI: the certificate's subject
// alternative name) matches subject, both regular expressions matched
// against the whole value. The signature must be in a transparency log
// of the root and, when the root lists certificate transparency logs,
// the certificate must carry a timestamp of one. Its error is a
// *KeylessError naming the part at fault.
func (k *Keys) WithKeyless(rootJSON []byte, issuer, subject string) (*Keys, error) {
	tr, err := root.NewTrustedRootFromJSON(rootJSON)
	switch {
	case err != nil:
		return nil, keylessErr(PartTrustedRoot, "trusted root: %v", err)
	case len(tr.FulcioCertificateAuthorities()) == 0:
		return nil, keylessErr(PartTrustedRoot, "trusted root: it lists no certificate authority (certificateAuthorities), so no keyless certificate can chain to it")
	case len(tr.RekorLogs()) == 0:
		return nil, keylessErr(PartTrustedRoot, "trusted root: it lists no transparency log (tlogs), and a keyless signature is checked against one")
	case issuer == "":
		return nil, keylessErr(PartIssuer, "keyless signatures need the OIDC issuer to trust (a regular expression), and none is given")
	case subject == "":
		return nil, keylessErr(PartIdentity, "keyless signatures need the identity to trust (a regular expression over the certificate's subject), and none is given")
	}
	whole := func(part, expr string) (string, error) {
		anchored := `^(?:` + expr + `)$`
		if _, err := regexp.Compile(anchored); err != nil {
			return "", keylessErr(part, "%s %q is not a regular expression: %v", part, expr, err)
		}
		return anchored, nil
	}
	issuerRE, err := whole(PartIssuer, issuer)
	if err != nil {
		return nil, err
	}
	subjectRE, err := whole(PartIdentity, subject)
	if err != nil {
		return nil, err
	}
	identity, err := verify.NewShortCertificateIdentity("", issuerRE, "", subjectRE)
	if err != nil {
		return nil, fmt.Errorf("keyless identity: %w", err)
	}
	opts := []verify.VerifierOption{verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)}
	if len(tr.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(tr, opts...)
	if err != nil {
		return nil, fmt.Errorf("keyless verifier: %w", err)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s", rootJSON, issuer, subject))
	out := &Keys{}
	if k != nil {
		*out = *k
	}
	out.keyless = &keyless{verifier: v, identity: identity, issuer: issuer, subject: subject, id: hex.EncodeToString(sum[:])}
	return out, nil
}

// check verifies entity, a keyless signature of what artifact gives,
// against the trusted root and identity: "" when it holds, else why not,
// naming who signed.
func (kl *keyless) check(entity verify.SignedEntity, artifact verify.ArtifactPolicyOption) string {
	signer := "an unreadable certificate"
	if content, err := entity.VerificationContent(); err == nil {
		if cert := content.Certificate(); cert != nil {
			signer = describe(cert)
		}
	}
	policy := verify.NewPolicy(artifact, verify.WithCertificateIdentity(kl.identity))
	_, err := kl.verifier.Verify(entity, policy)
	var mismatch *verify.ErrNoMatchingCertificateIdentity
	switch {
	case errors.As(err, &mismatch):
		return fmt.Sprintf("signed keylessly by %s, not by an identity the sync trusts (issuer %q, identity %q)", signer, kl.issuer, kl.subject)
	case err != nil:
		return fmt.Sprintf("the keyless signature by %s does not verify against the trusted root: %v", signer, err)
	}
	return ""
}

// describe names who a Fulcio certificate was issued to.
func describe(cert *x509.Certificate) string {
	s, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return "a certificate that is not Fulcio's"
	}
	issuer := s.Extensions.Issuer
	if issuer == "" {
		issuer = s.CertificateIssuer
	}
	return fmt.Sprintf("%s (issuer %s)", s.SubjectAlternativeName, issuer)
}

// unkeyed is the reason a keyless signature does not count for a sync
// that trusts no keyless identity.
const unkeyed = "signed keylessly (a Fulcio certificate), and the sync trusts keys only: give the trusted root, issuer and identity to trust keyless signatures"

// checkKeylessBundle checks that the DSSE envelope of keyless bundle
// body (named name) is signed by the trusted identity: "" when it is.
// What its statement names is the caller's check.
func (v *verifier) checkKeylessBundle(name string, body []byte) string {
	if v.keys.keyless == nil {
		return unkeyed
	}
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(body); err != nil {
		return fmt.Sprintf("bundle %s is not a sigstore bundle: %v", name, err)
	}
	// A DSSE envelope's signature covers its statement whatever artifact
	// it names, so the artifact is left to the caller's check.
	return v.keys.keyless.check(&b, verify.WithoutArtifactUnsafe())
}
