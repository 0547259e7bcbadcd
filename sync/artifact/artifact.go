// Package artifact is the OCI side of a sync: manifests published as an
// OCI artifact (`flux push artifact`, `oras push`) in a registry, polled
// by digest, verified against cosign public keys, and read as a
// read-only io/fs.FS, as package source reads a Git commit's tree.
//
// A poll is Head (one HEAD request for a tag: the manifest's digest, no
// download; a tag listing first for a semver range; nothing for a
// digest), then Fetch only when the digest changed: the manifest, its
// first layer of manifests (see layerTypes), and, when keys are set, its
// cosign signature. Snapshot hands out what Fetch read, or the reason the
// artifact is refused. Nothing here logs or writes to disk.
package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	gosync "sync"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"plimsoll.dev/plimsoll/sync/source"
)

// Defaults and limits.
const (
	defaultTimeout = 60 * time.Second
	// DefaultMaxLayerBytes bounds the layer downloaded, compressed.
	DefaultMaxLayerBytes = 64 << 20
	// DefaultMaxFileBytes bounds one file of the layer, as a Git
	// source's (source.Config.MaxFileBytes).
	DefaultMaxFileBytes = 4 << 20
	// maxTreeRatio bounds the layer's files in all, unpacked, as a
	// multiple of DefaultMaxLayerBytes' worth: a gzip bomb ends early.
	maxTreeRatio = 4
	// maxManifestBytes bounds an artifact's manifest.
	maxManifestBytes = 4 << 20

	// Annotations of an artifact's manifest the commit it stands for is
	// described with (`flux push artifact` sets them from --source,
	// --revision and the time).
	annotationRevision = "org.opencontainers.image.revision"
	annotationSource   = "org.opencontainers.image.source"
	annotationCreated  = "org.opencontainers.image.created"
)

// Credentials give the user name and password of a registry host; ok is
// false when there are none. *helm.Credentials implements it.
type Credentials interface {
	ForHost(host string) (user, password string, ok bool)
}

// Config says which artifact to follow and how.
type Config struct {
	// Ref is the repository, tag, semver range or digest (see ParseRef).
	Ref Ref
	// PlainHTTP talks to the registry over HTTP rather than HTTPS.
	PlainHTTP bool
	// Credentials, when set, log in to the registry.
	Credentials Credentials
	// Keys, when set, are the cosign public keys an artifact must be
	// signed with to be given out by Snapshot.
	Keys *Keys
	// Timeout bounds every call to the registry; default 60s.
	Timeout time.Duration
	// HTTP is the client requests go through; default http.DefaultClient.
	HTTP *http.Client
	// MaxLayerBytes and MaxFileBytes bound what is read; defaults
	// DefaultMaxLayerBytes and DefaultMaxFileBytes.
	MaxLayerBytes, MaxFileBytes int64
}

// Source follows one artifact reference. Its methods are safe to call
// from several goroutines; they run one at a time. It implements the
// source of a sync (Head, Fetch, Snapshot, Descends) as
// *source.Repository does, a digest standing where a commit's hash does.
type Source struct {
	cfg         Config
	name        string
	repo        *remote.Repository
	sigs        *verifier
	semverRange *semver.Constraints
	mu          gosync.Mutex
	// last is the artifact Fetch read last; nil before.
	last *fetched
}

// fetched is an artifact read: its tree, or why it may not be applied.
type fetched struct {
	digest string
	commit source.Commit
	tree   *tree
	// refused is the signature check's verdict, nil when it passed or
	// there are no keys.
	refused error
}

// New checks cfg and returns its Source. It does not contact the
// registry.
func New(cfg Config) (*Source, error) {
	if cfg.Ref.Repository == "" {
		return nil, errors.New("no OCI repository given")
	}
	repo, err := remote.NewRepository(cfg.Ref.Repository)
	if err != nil {
		return nil, fmt.Errorf("OCI repository %s: %w", cfg.Ref.Repository, err)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("timeout %s is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.MaxLayerBytes <= 0 {
		cfg.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	repo.PlainHTTP = cfg.PlainHTTP
	repo.Client = &auth.Client{Client: cfg.HTTP, Cache: auth.NewCache(), Credential: func(_ context.Context, host string) (auth.Credential, error) {
		if cfg.Credentials != nil {
			if user, pass, ok := cfg.Credentials.ForHost(host); ok {
				return auth.Credential{Username: user, Password: pass}, nil
			}
		}
		return auth.EmptyCredential, nil
	}}
	s := &Source{cfg: cfg, name: cfg.Ref.Repository, repo: repo, sigs: &verifier{repo: repo, keys: cfg.Keys, name: cfg.Ref.Repository}}
	if cfg.Ref.SemVer != "" {
		if s.semverRange, err = semver.NewConstraint(cfg.Ref.SemVer); err != nil {
			return nil, fmt.Errorf("semver range %q: %w", cfg.Ref.SemVer, err)
		}
	}
	return s, nil
}

// Head returns the digest the reference names now: the tag's (one HEAD
// request), the highest tag in the semver range's (a listing of the tags
// first), or the digest given (no request).
func (s *Source) Head(ctx context.Context) (string, error) {
	ref := s.cfg.Ref
	if ref.Digest != "" {
		return ref.Digest, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	tag := ref.Tag
	if s.semverRange != nil {
		var err error
		if tag, err = s.newest(ctx); err != nil {
			return "", err
		}
	}
	desc, err := s.repo.Resolve(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return "", fmt.Errorf("OCI repository %s has no tag %s", s.name, tag)
	}
	if err != nil {
		return "", fmt.Errorf("resolve tag %s of %s: %w", tag, s.name, err)
	}
	return desc.Digest.String(), nil
}

// newest is the highest tag of the repository in the semver range.
func (s *Source) newest(ctx context.Context) (string, error) {
	var best *semver.Version
	var bestTag string
	err := s.repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			v, err := semver.NewVersion(t)
			if err != nil || !s.semverRange.Check(v) {
				continue
			}
			if best == nil || v.GreaterThan(best) {
				best, bestTag = v, t
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list the tags of %s: %w", s.name, err)
	}
	if best == nil {
		return "", fmt.Errorf("OCI repository %s has no tag in semver range %q", s.name, s.cfg.Ref.SemVer)
	}
	return bestTag, nil
}

// Fetch reads artifact digest, unless it is the one read last: its
// manifest, its layer of manifests and, with keys, its signatures. An
// artifact that is not one of manifests, or not signed, is no error
// here: Snapshot refuses it. An artifact refused for its signature is
// checked again at each Fetch, so that a signature pushed later counts;
// its layer is not downloaded again.
func (s *Source) Fetch(ctx context.Context, digest string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if s.last != nil && s.last.digest == digest {
		if !errors.Is(s.last.refused, source.ErrUnverified) {
			return nil
		}
		refused, err := s.check(ctx, digest)
		if err == nil {
			s.last.refused = refused
		}
		return err
	}
	f, err := s.read(ctx, digest)
	if err != nil {
		return err
	}
	if f.tree != nil {
		if f.refused, err = s.check(ctx, digest); err != nil {
			return err
		}
	}
	s.last = f
	return nil
}

// check runs the signature check of digest: the refusal, or an error
// when the registry could not be read.
func (s *Source) check(ctx context.Context, digest string) (refused, err error) {
	if s.cfg.Keys == nil {
		return nil, nil
	}
	err = s.sigs.verify(ctx, digest)
	if errors.Is(err, source.ErrUnverified) {
		return err, nil
	}
	return nil, err
}

// read downloads artifact digest. An artifact that is not one of
// manifests comes back with its reason in refused and no tree.
func (s *Source) read(ctx context.Context, digest string) (*fetched, error) {
	f := &fetched{digest: digest}
	desc, rc, err := s.repo.FetchReference(ctx, digest)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("OCI repository %s has no artifact %s", s.name, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("read the manifest of artifact %s of %s: %w", digest, s.name, err)
	}
	defer rc.Close()
	if desc.Size > maxManifestBytes {
		f.refused = fmt.Errorf("the manifest of artifact %s holds %d bytes, more than the limit of %d", digest, desc.Size, maxManifestBytes)
		return f, nil
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("read the manifest of artifact %s of %s: %w", digest, s.name, err)
	}
	if desc.MediaType == ocispec.MediaTypeImageIndex || desc.MediaType == mediaTypeDockerList {
		f.refused = fmt.Errorf("artifact %s of %s is an index of several manifests (%s), not an artifact of manifests", digest, s.name, desc.MediaType)
		return f, nil
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		f.refused = fmt.Errorf("the manifest of artifact %s of %s does not parse: %v", digest, s.name, err)
		return f, nil
	}
	f.commit = s.describe(digest, m.Annotations)
	layer, ok := manifestLayer(m.Layers)
	if !ok {
		f.refused = fmt.Errorf("artifact %s of %s has no layer of manifests: want one of type %s, %s or %s", digest, s.name, MediaTypeFluxContent, MediaTypeTarGzip, MediaTypeTar)
		return f, nil
	}
	if layer.Size > s.cfg.MaxLayerBytes {
		f.refused = fmt.Errorf("the layer of artifact %s of %s holds %d bytes, more than the limit of %d", digest, s.name, layer.Size, s.cfg.MaxLayerBytes)
		return f, nil
	}
	blob, err := s.repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		return nil, fmt.Errorf("read layer %s of artifact %s of %s: %w", layer.Digest, digest, s.name, err)
	}
	defer blob.Close()
	data, err := content.ReadAll(blob, layer)
	if err != nil {
		return nil, fmt.Errorf("read layer %s of artifact %s of %s: %w", layer.Digest, digest, s.name, err)
	}
	t, err := unpack(data, layer.MediaType, s.cfg.MaxFileBytes, s.cfg.MaxLayerBytes*maxTreeRatio, f.commit.Time)
	if err != nil {
		f.refused = fmt.Errorf("layer %s of artifact %s of %s: %w", layer.Digest, digest, s.name, err)
		return f, nil
	}
	f.tree = t
	return f, nil
}

// mediaTypeDockerList is a Docker manifest list, an index by another name.
const mediaTypeDockerList = "application/vnd.docker.distribution.manifest.list.v2+json"

// manifestLayer is the first layer of a type of layerTypes.
func manifestLayer(layers []ocispec.Descriptor) (ocispec.Descriptor, bool) {
	for _, l := range layers {
		for _, t := range layerTypes {
			if l.MediaType == t {
				return l, true
			}
		}
	}
	return ocispec.Descriptor{}, false
}

// describe is the commit an artifact stands for: its digest; as subject
// the reference followed and, when the artifact names it, the source
// revision it was pushed from; its creation time.
func (s *Source) describe(digest string, annotations map[string]string) source.Commit {
	c := source.Commit{Hash: digest, Subject: s.cfg.Ref.String()}
	if rev := annotations[annotationRevision]; rev != "" {
		c.Subject += " from " + rev
		if src := annotations[annotationSource]; src != "" {
			c.Subject += " of " + src
		}
	}
	if t, err := time.Parse(time.RFC3339, annotations[annotationCreated]); err == nil {
		c.Time = t
	}
	return c
}

// Snapshot is artifact digest's tree, fetched first if Fetch did not read
// it last; an error when it is refused (an error wrapping
// source.ErrUnverified when not signed by a trusted key).
func (s *Source) Snapshot(ctx context.Context, digest string) (*source.Snapshot, error) {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last == nil || last.digest != digest {
		if err := s.Fetch(ctx, digest); err != nil {
			return nil, err
		}
		s.mu.Lock()
		last = s.last
		s.mu.Unlock()
	}
	if last.refused != nil {
		return nil, last.refused
	}
	return &source.Snapshot{Commit: last.commit, FS: last.tree}, nil
}

// Descends is true: an artifact has no history, and any digest may
// follow any other (a sync of an artifact does not hold rewinds).
func (s *Source) Descends(context.Context, string, string) (bool, error) { return true, nil }
