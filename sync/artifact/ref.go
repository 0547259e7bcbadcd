package artifact

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
)

// Scheme starts the URL of an OCI repository.
const Scheme = "oci://"

// defaultTag is the tag followed when none, no semver range and no digest
// is given.
const defaultTag = "latest"

// tagPattern is a tag as the OCI distribution spec allows it.
var tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// Ref is an artifact followed: a repository, and one of a tag, a semver
// range over its tags, or a digest.
type Ref struct {
	// Repository is host[:port]/path, without the scheme.
	Repository string
	// Tag, SemVer and Digest: exactly one is set.
	Tag, SemVer, Digest string
}

// Parts of a reference a RefError names.
const (
	PartRepository = "repository"
	PartTag        = "tag"
	PartSemver     = "semver"
	PartDigest     = "digest"
)

// RefError is a reference ParseRef refuses. Part is the part at fault
// (PartRepository, PartTag, PartSemver, PartDigest), "" when several
// parts are given that exclude each other.
type RefError struct {
	Part string
	msg  string
}

func (e *RefError) Error() string { return e.msg }

func refErr(part, format string, args ...any) *RefError {
	return &RefError{Part: part, msg: fmt.Sprintf(format, args...)}
}

// ParseRef checks an artifact reference: url is oci://host[:port]/path,
// and at most one of tag, semverRange and dgst is given (the tag "latest"
// when none is). Its error is a *RefError, naming what is wrong with which
// part.
func ParseRef(url, tag, semverRange, dgst string) (Ref, error) {
	if !strings.HasPrefix(url, Scheme) {
		return Ref{}, refErr(PartRepository, "OCI repository %q: want %shost[:port]/path", url, Scheme)
	}
	repo := strings.TrimSuffix(strings.TrimPrefix(url, Scheme), "/")
	parsed, err := registry.ParseReference(repo)
	switch {
	case err != nil:
		return Ref{}, refErr(PartRepository, "OCI repository %q: %v", url, err)
	case parsed.Reference != "":
		return Ref{}, refErr(PartRepository, "OCI repository %q names a tag or digest in the URL; give it as the tag, semver or digest instead", url)
	case strings.Contains(parsed.Registry, "@"):
		return Ref{}, refErr(PartRepository, "OCI repository %q carries credentials; give them in a credentials file or Secret", url)
	}
	ref := Ref{Repository: repo, Tag: tag, SemVer: semverRange, Digest: dgst}
	given := 0
	for _, v := range []string{tag, semverRange, dgst} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return Ref{}, refErr("", "give one of an OCI tag, semver range and digest, not several")
	case given == 0:
		ref.Tag = defaultTag
	case tag != "" && !tagPattern.MatchString(tag):
		return Ref{}, refErr(PartTag, "OCI tag %q is not a tag (letters, digits, '_', '.' and '-', at most 128)", tag)
	case semverRange != "":
		if _, err := semver.NewConstraint(semverRange); err != nil {
			return Ref{}, refErr(PartSemver, "semver range %q: %v", semverRange, err)
		}
	case dgst != "":
		d, err := digest.Parse(dgst)
		if err != nil {
			return Ref{}, refErr(PartDigest, "OCI digest %q: %v (want sha256: and 64 hex digits)", dgst, err)
		}
		ref.Digest = d.String()
	}
	return ref, nil
}

// String is the reference as people write it: oci://host/path:tag,
// oci://host/path@sha256:…, or oci://host/path with its range in
// brackets.
func (r Ref) String() string {
	switch {
	case r.Digest != "":
		return Scheme + r.Repository + "@" + r.Digest
	case r.SemVer != "":
		return fmt.Sprintf("%s%s (semver %s)", Scheme, r.Repository, r.SemVer)
	}
	return Scheme + r.Repository + ":" + r.Tag
}
