package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// remote speaks the Git upload-pack protocol to one server. It has its own
// transport client, so nothing is registered in go-git's process-wide
// protocol table.
type remote struct {
	url    remoteURL
	client transport.Transport
	auth   transport.AuthMethod
}

// newUpstream returns where u's objects come from.
func newUpstream(u remoteURL, auth transport.AuthMethod) upstream {
	switch u.kind {
	case kindFile:
		return localRepository{path: u.endpoint.Path}
	case kindHTTP, kindHTTPS:
		return &remote{url: u, auth: auth, client: githttp.NewClient(&http.Client{})}
	}
	return &remote{url: u, auth: auth, client: gitssh.DefaultClient}
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
func (r *remote) fetch(ctx context.Context, c clone, branch plumbing.ReferenceName) (tip plumbing.Hash, err error) {
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
	if c.storage.HasEncodedObject(tip) != nil {
		if err := r.download(ctx, sess, ar, c, branch, tip); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if err := c.storage.SetReference(plumbing.NewHashReference(branch, tip)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("update local %s: %w", branch, err)
	}
	return tip, nil
}

// download asks the server for a pack with everything reachable from tip
// and stores it.
func (r *remote) download(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs,
	c clone, branch plumbing.ReferenceName, tip plumbing.Hash) (err error) {
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
	req.Haves = c.have(branch)

	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return plainTransportError(err)
	}
	defer func() {
		if cerr := resp.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := c.storePack(demux(req.Capabilities, resp)); err != nil {
		return fmt.Errorf("store pack: %w", err)
	}
	if err := c.storage.HasEncodedObject(tip); err != nil {
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
