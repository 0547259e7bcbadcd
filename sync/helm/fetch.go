package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"plimsoll.dev/plimsoll/sync/artifact"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
)

// UnreachableError is a chart repository or registry that could not be
// read: the sync fails, keeps what it applied, prunes nothing, and tries
// again with its backoff.
type UnreachableError struct {
	// Repo is the repository's URL.
	Repo string
	// Since is when the first of the failed attempts in a row was made.
	Since time.Time
	// Err is the last failure.
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("chart repository %s unreachable since %s: %v", e.Repo, e.Since.UTC().Format(time.RFC3339), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// errNotFound marks a chart or version the repository does not have.
var errNotFound = errors.New("not found")

// fetcher fetches chart archives and keeps them by digest: on disk under
// the cache folder when there is one, else in memory. What a name and
// version resolved to is kept too, so that a pinned chart is fetched once
// per process, and a repository that goes down later does not stop the
// sync of a chart already fetched.
type fetcher struct {
	cfg Config

	mu sync.Mutex
	// resolved maps repository, chart, version and digest to the
	// archive's digest.
	resolved map[string]string
	// archives holds the archives by digest when there is no cache folder.
	archives map[string][]byte
	// down maps a repository to the time of the first failure in a row.
	down map[string]time.Time
}

func newFetcher(cfg Config) *fetcher {
	return &fetcher{cfg: cfg, resolved: map[string]string{}, archives: map[string][]byte{}, down: map[string]time.Time{}}
}

// chart returns the chart name at version from repo, and the digest of
// its archive ("sha256:..."). want, when set, is the digest the archive
// (HTTP) or the manifest (OCI) must have.
func (f *fetcher) chart(ctx context.Context, repo, name, version, want string, plainHTTP bool) (*chart.Chart, string, error) {
	key := strings.Join([]string{repo, name, version, want}, "\x00")
	f.mu.Lock()
	digest := f.resolved[key]
	f.mu.Unlock()
	var data []byte
	if digest != "" {
		data = f.cached(digest)
	}
	if data == nil {
		var err error
		if strings.HasPrefix(repo, "oci://") {
			data, digest, err = f.fromRegistry(ctx, repo, name, version, want, plainHTTP)
		} else {
			data, digest, err = f.fromIndex(ctx, repo, name, version, want)
		}
		if err != nil {
			return nil, "", f.failed(repo, err)
		}
		f.mu.Lock()
		delete(f.down, repo)
		f.resolved[key] = digest
		f.mu.Unlock()
		f.store(digest, data)
		f.cfg.Log.Info("fetched chart", "repo", repo, "chart", name, "version", version, "digest", digest, "bytes", len(data))
	}
	c, err := loadArchive(data, f.cfg.Limits, fmt.Sprintf("chart %s %s from %s", name, version, repo))
	if err != nil {
		return nil, "", err
	}
	if c.Metadata.Name != name || strings.TrimPrefix(c.Metadata.Version, "v") != strings.TrimPrefix(version, "v") {
		return nil, "", &manifest.Error{Reason: fmt.Sprintf("the archive of %s %s from %s holds chart %s %s", name, version, repo, c.Metadata.Name, c.Metadata.Version)}
	}
	return c, digest, nil
}

// failed classifies a fetch failure: bad input (a version the repository
// lacks, an archive over the limits, a digest that does not match) is a
// *manifest.Error; anything else makes the repository unreachable since
// its first failure in a row.
func (f *fetcher) failed(repo string, err error) error {
	var me *manifest.Error
	if errors.As(err, &me) {
		return err
	}
	if errors.Is(err, errNotFound) || errors.Is(err, errTooLarge) {
		return &manifest.Error{Reason: err.Error()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	since, ok := f.down[repo]
	if !ok {
		since = f.cfg.Now()
		f.down[repo] = since
	}
	return &UnreachableError{Repo: repo, Since: since, Err: err}
}

// cached returns the archive of a digest, nil when it is not kept.
func (f *fetcher) cached(digest string) []byte {
	if f.cfg.CacheDir == "" {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.archives[digest]
	}
	data, err := os.ReadFile(f.cachePath(digest))
	if err != nil || "sha256:"+sha256Hex(data) != digest {
		return nil
	}
	return data
}

// store keeps an archive by its digest.
func (f *fetcher) store(digest string, data []byte) {
	if f.cfg.CacheDir == "" {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.archives[digest] = data
		return
	}
	p := f.cachePath(digest)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		f.cfg.Log.Warn("keep chart archive", "digest", digest, "err", err)
		return
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		f.cfg.Log.Warn("keep chart archive", "digest", digest, "err", err)
		return
	}
	if err := os.Rename(tmp, p); err != nil {
		f.cfg.Log.Warn("keep chart archive", "digest", digest, "err", err)
	}
}

func (f *fetcher) cachePath(digest string) string {
	return filepath.Join(f.cfg.CacheDir, cacheDirName, strings.ReplaceAll(digest, ":", "-")+".tgz")
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// fromIndex fetches a chart from an HTTP repository: its index.yaml,
// read as a stream up to its limit (see readIndex), then the archive it
// names, read up to its limit.
func (f *fetcher) fromIndex(ctx context.Context, repo, name, version, want string) ([]byte, string, error) {
	base, err := url.Parse(strings.TrimSuffix(repo, "/") + "/")
	if err != nil {
		return nil, "", err
	}
	indexURL := base.JoinPath("index.yaml")
	what := "index " + indexURL.String()
	body, err := f.open(ctx, indexURL, f.cfg.Limits.MaxIndexBytes, what)
	if err != nil {
		return nil, "", err
	}
	entries, ok, err := readIndex(body, what, name, maxIndexParseBytes)
	body.Close()
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", fmt.Errorf("repository %s has no chart %s: %w", repo, name, errNotFound)
	}
	var versions []string
	for _, e := range entries {
		if strings.TrimPrefix(e.Version, "v") != strings.TrimPrefix(version, "v") {
			versions = append(versions, e.Version)
			continue
		}
		if len(e.URLs) == 0 {
			return nil, "", &manifest.Error{Reason: fmt.Sprintf("index %s lists %s %s without a URL", indexURL, name, version)}
		}
		archiveURL, err := base.Parse(e.URLs[0])
		if err != nil {
			return nil, "", &manifest.Error{Reason: fmt.Sprintf("index %s: URL %q of %s %s: %v", indexURL, e.URLs[0], name, version, err)}
		}
		data, err := f.get(ctx, archiveURL, f.cfg.Limits.MaxArchiveBytes, "archive "+archiveURL.String())
		if err != nil {
			return nil, "", err
		}
		digest := "sha256:" + sha256Hex(data)
		if e.Digest != "" && "sha256:"+strings.TrimPrefix(e.Digest, "sha256:") != digest {
			return nil, "", &manifest.Error{Reason: fmt.Sprintf("archive %s has digest %s, not the %s its index lists", archiveURL, digest, e.Digest)}
		}
		if want != "" && want != digest {
			return nil, "", &manifest.Error{Reason: fmt.Sprintf("archive %s has digest %s, not the %s the release pins", archiveURL, digest, want)}
		}
		return data, digest, nil
	}
	return nil, "", fmt.Errorf("repository %s has no version %s of chart %s (it has %s): %w", repo, version, name, newest(versions, 5), errNotFound)
}

// newest names up to n versions, newest first.
func newest(versions []string, n int) string {
	slices.SortFunc(versions, func(a, b string) int {
		va, errA := semver.NewVersion(a)
		vb, errB := semver.NewVersion(b)
		if errA != nil || errB != nil {
			return strings.Compare(b, a)
		}
		return vb.Compare(va)
	})
	if len(versions) == 0 {
		return "no version"
	}
	if len(versions) > n {
		return strings.Join(versions[:n], ", ") + fmt.Sprintf(" and %d more", len(versions)-n)
	}
	return strings.Join(versions, ", ")
}

// get reads a URL into memory, up to limit bytes: a longer answer is
// refused as soon as it passes the limit, without being read whole.
func (f *fetcher) get(ctx context.Context, u *url.URL, limit int64, what string) ([]byte, error) {
	body, err := f.open(ctx, u, limit, what)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if errors.Is(err, errTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return data, nil
}

// open asks for a URL and returns its answer's body, which fails with
// errTooLarge once it passes limit bytes; one that says it is longer is
// refused at once.
func (f *fetcher) open(ctx context.Context, u *url.URL, limit int64, what string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if user, pass, ok := f.cfg.Credentials.ForHost(u.Host); ok {
		req.SetBasicAuth(user, pass)
	}
	resp, err := f.cfg.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, fmt.Errorf("read %s: %s: %w", what, resp.Status, errNotFound)
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, fmt.Errorf("read %s: %s", what, resp.Status)
	case resp.ContentLength > limit:
		resp.Body.Close()
		return nil, fmt.Errorf("%s holds %d bytes, more than the limit of %d: %w", what, resp.ContentLength, limit, errTooLarge)
	}
	return &cappedBody{ReadCloser: resp.Body, left: limit, limit: limit, what: what}, nil
}

// cappedBody is an answer's body that fails with errTooLarge as soon as
// it passes its limit, having read one byte past it at most.
type cappedBody struct {
	io.ReadCloser
	left, limit int64
	what        string
	over        error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.over != nil {
		return 0, b.over
	}
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		b.over = fmt.Errorf("%s is larger than the limit of %d bytes: %w", b.what, b.limit, errTooLarge)
		return 0, b.over
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// fromRegistry fetches a chart from an OCI registry: the manifest of
// tag version (or of digest want), then its chart layer, each read up to
// its limit and checked against its digest.
func (f *fetcher) fromRegistry(ctx context.Context, repo, name, version, want string, plainHTTP bool) ([]byte, string, error) {
	ref := strings.TrimSuffix(strings.TrimPrefix(repo, "oci://"), "/") + "/" + name
	r, err := remote.NewRepository(ref)
	if err != nil {
		return nil, "", &manifest.Error{Reason: fmt.Sprintf("%s is not a registry repository: %v", ref, err)}
	}
	r.PlainHTTP = plainHTTP
	r.Client = &auth.Client{
		Client: f.cfg.HTTP,
		Credential: func(_ context.Context, host string) (auth.Credential, error) {
			if user, pass, ok := f.cfg.Credentials.ForHost(host); ok {
				return auth.Credential{Username: user, Password: pass}, nil
			}
			return auth.EmptyCredential, nil
		},
	}
	tag := strings.ReplaceAll(version, "+", "_")
	target := tag
	if want != "" {
		target = want
	}
	desc, rc, err := r.FetchReference(ctx, target)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, "", fmt.Errorf("registry repository %s has no %s: %w", ref, target, errNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the manifest of %s:%s: %w", ref, target, err)
	}
	defer rc.Close()
	if desc.Size > maxManifestBytes {
		return nil, "", fmt.Errorf("the manifest of %s:%s holds %d bytes, more than the limit of %d: %w", ref, target, desc.Size, int64(maxManifestBytes), errTooLarge)
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, "", fmt.Errorf("read the manifest of %s:%s: %w", ref, target, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", &manifest.Error{Reason: fmt.Sprintf("the manifest of %s:%s does not parse: %v", ref, target, err)}
	}
	if f.cfg.VerifyKeys != nil {
		err := artifact.Verify(ctx, r, ref, desc.Digest.String(), f.cfg.VerifyKeys)
		if errors.Is(err, source.ErrUnverified) {
			return nil, "", &manifest.Error{Reason: fmt.Sprintf("chart %s:%s refused: %v", ref, target, err)}
		}
		if err != nil {
			return nil, "", err
		}
	}
	for _, layer := range m.Layers {
		if layer.MediaType != mediaTypeChart {
			continue
		}
		if layer.Size > f.cfg.Limits.MaxArchiveBytes {
			return nil, "", fmt.Errorf("the chart layer of %s:%s holds %d bytes, more than the limit of %d: %w", ref, target, layer.Size, f.cfg.Limits.MaxArchiveBytes, errTooLarge)
		}
		blob, err := r.Blobs().Fetch(ctx, layer)
		if err != nil {
			return nil, "", fmt.Errorf("read the chart layer of %s:%s: %w", ref, target, err)
		}
		defer blob.Close()
		data, err := content.ReadAll(blob, layer)
		if err != nil {
			return nil, "", fmt.Errorf("read the chart layer of %s:%s: %w", ref, target, err)
		}
		return data, layer.Digest.String(), nil
	}
	return nil, "", &manifest.Error{Reason: fmt.Sprintf("%s:%s is not a Helm chart: its manifest has no layer of type %s", ref, target, mediaTypeChart)}
}

// Credentials are the user names and passwords of chart repository and
// registry hosts, read from a file in the format of Docker's
// config.json ({"auths": {"host[:port]": {"username": ..., "password":
// ...} or {"auth": base64("user:password")}}}), which `helm registry
// login` and `docker login` write.
type Credentials struct {
	hosts map[string]credential
}

type credential struct{ user, password string }

// ForHost returns the credentials of a host, ok false when there are none.
// A nil Credentials has none.
func (c *Credentials) ForHost(host string) (user, password string, ok bool) {
	if c == nil {
		return "", "", false
	}
	cred, ok := c.hosts[host]
	return cred.user, cred.password, ok
}
