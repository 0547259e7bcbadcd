package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// remote speaks the Git upload-pack protocol to one repository. It has its
// own transport client, so nothing is registered in go-git's process-wide
// protocol table.
type remote struct {
	url    remoteURL
	client transport.Transport
	auth   transport.AuthMethod
	// sendHaves says whether the server may be told which commits the local
	// clone already has. The in-process server used for file URLs fails on
	// a "have" it does not know (after a force-push), so it gets none and
	// sends the whole branch.
	sendHaves bool
}

func newRemote(u remoteURL, auth transport.AuthMethod) *remote {
	r := &remote{url: u, auth: auth, sendHaves: true}
	switch u.kind {
	case kindFile:
		// Served in process by go-git, so no git binary is needed.
		r.client = server.NewClient(localLoader{base: osfs.New("")})
		r.sendHaves = false
	case kindHTTP, kindHTTPS:
		r.client = githttp.NewClient(&http.Client{})
	case kindSSH:
		r.client = gitssh.DefaultClient
	}
	return r
}

// advertised opens an upload-pack session and reads the references the
// server advertises. The caller closes the session.
func (r *remote) advertised(ctx context.Context) (transport.UploadPackSession, *packp.AdvRefs, error) {
	sess, err := r.client.NewUploadPackSession(r.url.endpoint, r.auth)
	if err != nil {
		return nil, nil, plainTransportError(err)
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		_ = sess.Close()
		return nil, nil, plainTransportError(err)
	}
	return sess, ar, nil
}

// branchTip returns the hash branch points at among the advertised
// references, or an error wrapping ErrBranchNotFound.
func branchTip(ar *packp.AdvRefs, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	if h, ok := ar.References[branch.String()]; ok {
		return h, nil
	}
	if len(ar.References) == 0 {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s (the repository is empty)", ErrBranchNotFound, branch)
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: %s", ErrBranchNotFound, branch)
}

// head lists the remote's references and returns the tip of branch. Git
// has no way to ask for one reference only in protocol v0, so this reads
// the advertisement; no objects are transferred.
func (r *remote) head(ctx context.Context, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	sess, ar, err := r.advertised(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s (the repository is empty)", ErrBranchNotFound, branch)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer func() { _ = sess.Close() }()
	return branchTip(ar, branch)
}

// fetch downloads the objects of branch's current tip into st, then points
// the local branch at that tip whatever it pointed at before (a forced
// update, so a force-pushed history replaces the old one). It returns the
// new tip.
func (r *remote) fetch(ctx context.Context, st *filesystem.Storage, branch plumbing.ReferenceName) (tip plumbing.Hash, err error) {
	sess, ar, err := r.advertised(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s (the repository is empty)", ErrBranchNotFound, branch)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer func() {
		if cerr := sess.Close(); err == nil && cerr != nil {
			err = plainTransportError(cerr)
		}
	}()

	tip, err = branchTip(ar, branch)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if st.HasEncodedObject(tip) != nil {
		if err := r.download(ctx, sess, ar, st, branch, tip); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if err := st.SetReference(plumbing.NewHashReference(branch, tip)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("update local %s: %w", branch, err)
	}
	return tip, nil
}

// download asks the server for a pack with everything reachable from tip
// and stores it.
func (r *remote) download(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs,
	st *filesystem.Storage, branch plumbing.ReferenceName, tip plumbing.Hash) (err error) {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	// A thin pack may refer to objects outside it; asking for a full one
	// keeps every stored pack self-contained.
	req.Capabilities.Delete(capability.ThinPack)
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return err
		}
	}
	req.Wants = []plumbing.Hash{tip}
	if r.sendHaves {
		if local, err := st.Reference(branch); err == nil && st.HasEncodedObject(local.Hash()) == nil {
			req.Haves = []plumbing.Hash{local.Hash()}
		}
	}

	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return plainTransportError(err)
	}
	defer func() {
		if cerr := resp.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := packfile.UpdateObjectStorage(st, demux(req.Capabilities, resp)); err != nil {
		return fmt.Errorf("store pack: %w", err)
	}
	if err := st.HasEncodedObject(tip); err != nil {
		return fmt.Errorf("the server's pack lacks commit %s", tip)
	}
	return nil
}

// demux strips the side-band framing when the request asked for it.
func demux(caps *capability.List, r io.Reader) io.Reader {
	switch {
	case caps.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, r)
	case caps.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, r)
	}
	return r
}

// plainTransportError keeps go-git's classification of authentication and
// not-found answers but drops the body text a server sent with them, which
// is not under this package's control.
func plainTransportError(err error) error {
	for _, known := range []error{
		transport.ErrAuthenticationRequired,
		transport.ErrAuthorizationFailed,
		transport.ErrRepositoryNotFound,
	} {
		if errors.Is(err, known) {
			return known
		}
	}
	return err
}

// localLoader finds the repository of a file URL, bare or with a work tree.
type localLoader struct {
	base billy.Filesystem
}

// Load returns the storage of the repository at ep.Path, or
// transport.ErrRepositoryNotFound.
func (l localLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	for _, dir := range []string{ep.Path, ep.Path + "/.git"} {
		fs, err := l.base.Chroot(dir)
		if err != nil {
			continue
		}
		if _, err := fs.Stat("HEAD"); err != nil {
			continue
		}
		if _, err := fs.Stat("objects"); err != nil {
			continue
		}
		return filesystem.NewStorage(fs, cache.NewObjectLRUDefault()), nil
	}
	return nil, transport.ErrRepositoryNotFound
}
