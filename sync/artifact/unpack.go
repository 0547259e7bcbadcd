package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// Media types of the layers an artifact's manifests may come in.
const (
	// MediaTypeFluxContent is the layer `flux push artifact` makes: a
	// gzip tarball of the directory pushed, its paths relative to it.
	MediaTypeFluxContent = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// MediaTypeFluxConfig is the config of an artifact Flux pushes.
	MediaTypeFluxConfig = "application/vnd.cncf.flux.config.v1+json"
	// MediaTypeTarGzip is an OCI layer as a gzip tarball: what `oras push`
	// makes of a directory (its paths start with the directory's name).
	MediaTypeTarGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
	// MediaTypeTar is an OCI layer as a plain tarball.
	MediaTypeTar = "application/vnd.oci.image.layer.v1.tar"
)

// layerTypes are the media types of the layers unpacked, in the order a
// manifest's layers are searched: the first layer of one of them is the
// artifact's tree.
var layerTypes = []string{MediaTypeFluxContent, MediaTypeTarGzip, MediaTypeTar}

// unpack reads the tarball of a layer of type mediaType into a tree:
// regular files and directories only, each file at most maxFile bytes
// and all of them at most maxTotal; an entry that is a link, a device or
// a path leaving the root is an error naming it.
func unpack(data []byte, mediaType string, maxFile, maxTotal int64, modTime time.Time) (*tree, error) {
	var r io.Reader = bytes.NewReader(data)
	if strings.HasSuffix(mediaType, "+gzip") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("ungzip the layer: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	t := newTree(modTime)
	tr := tar.NewReader(r)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the layer's tarball: %w", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name != "." {
				t.addDir(name)
			}
			continue
		case tar.TypeReg:
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeSymlink, tar.TypeLink:
			return nil, fmt.Errorf("tarball entry %s is a link (to %s): an artifact's manifests are regular files", hdr.Name, hdr.Linkname)
		default:
			return nil, fmt.Errorf("tarball entry %s is not a regular file nor a directory (tar type %q)", hdr.Name, hdr.Typeflag)
		}
		if name == "." {
			return nil, fmt.Errorf("tarball entry %q is a file at the root's own name", hdr.Name)
		}
		if hdr.Size > maxFile {
			return nil, fmt.Errorf("tarball entry %s holds %d bytes, more than the limit of %d a file may hold", hdr.Name, hdr.Size, maxFile)
		}
		if total += hdr.Size; total > maxTotal {
			return nil, fmt.Errorf("the layer's files hold more than the limit of %d bytes in all (at entry %s)", maxTotal, hdr.Name)
		}
		body, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, fmt.Errorf("read tarball entry %s: %w", hdr.Name, err)
		}
		t.addFile(name, body)
	}
}

// entryName is a tarball entry's name as a path of the tree: slashes,
// relative, cleaned; a name that is absolute or climbs out is an error.
func entryName(raw string) (string, error) {
	if strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") {
		return "", fmt.Errorf("tarball entry %q is not a relative slash path", raw)
	}
	clean := path.Clean(raw)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("tarball entry %q leaves the artifact's root", raw)
	}
	return clean, nil
}
