package declare

import (
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/source"
)

// Fields of oci: the artifact of an oci:// repository.
const (
	fieldTag       = "tag"
	fieldSemver    = "semver"
	fieldDigest    = "digest"
	fieldPlainHTTP = "plainHTTP"
)

// ociFields are the keys oci may hold.
var ociFields = []string{fieldTag, fieldSemver, fieldDigest, fieldPlainHTTP}

// ociDoc is oci as written.
type ociDoc struct {
	Tag       string `yaml:"tag"`
	Semver    string `yaml:"semver"`
	Digest    string `yaml:"digest"`
	PlainHTTP bool   `yaml:"plainHTTP"`
	// given is set when the declaration has an oci field at all.
	given bool
}

// UnmarshalYAML notes that oci was given.
func (o *ociDoc) UnmarshalYAML(n *yaml.Node) error {
	type plain ociDoc
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*o = ociDoc(p)
	o.given = true
	return nil
}

// readSource checks where the manifests come from: a Git repository and
// branch, or an OCI repository (oci://) and the artifact of its oci
// field; the fields of the one are refused with the other.
func (s *Spec) readSource(d *document) error {
	if !strings.HasPrefix(d.Repository, artifact.Scheme) {
		if d.OCI.given {
			return fieldErr(FieldOCI, "is for an OCI repository (oci://), and repository is a Git URL")
		}
		if d.Verify.Cosign != "" {
			return fieldErr(FieldVerify+"."+fieldCosign, "checks OCI artifacts, and repository is a Git URL: use verify.openpgp or verify.ssh")
		}
		if d.Verify.keyless() {
			return fieldErr(FieldVerify+"."+fieldTrustedRoot, "with verify.issuer and verify.identity, checks OCI artifacts, and repository is a Git URL: use verify.openpgp or verify.ssh")
		}
		if err := source.CheckURL(d.Repository); err != nil {
			return fieldErr(FieldRepository, "%v", err)
		}
		if err := source.CheckBranch(d.Branch); err != nil {
			return fieldErr(FieldBranch, "%v", err)
		}
		if s.Branch == "" {
			s.Branch = "main"
		}
		return nil
	}
	switch {
	case d.Branch != "":
		return fieldErr(FieldBranch, "an OCI repository has no branches: give oci.tag, oci.semver or oci.digest")
	case d.Verify.OpenPGP != "":
		return fieldErr(FieldVerify+"."+fieldOpenPGP, "checks Git commits, and repository is an OCI repository: use verify.cosign")
	case d.Verify.SSH != "":
		return fieldErr(FieldVerify+"."+fieldSSH, "checks Git commits, and repository is an OCI repository: use verify.cosign")
	}
	ref, err := artifact.ParseRef(d.Repository, d.OCI.Tag, d.OCI.Semver, d.OCI.Digest)
	if err != nil {
		field := FieldOCI
		if bad := (*artifact.RefError)(nil); errors.As(err, &bad) && bad.Part == artifact.PartRepository {
			field = FieldRepository
		} else if bad != nil && bad.Part != "" {
			field = FieldOCI + "." + bad.Part
		}
		return fieldErr(field, "%v", err)
	}
	s.OCI, s.PlainHTTP = &ref, d.OCI.PlainHTTP
	return nil
}
