package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// FuzzUnpack checks that any layer either unpacks into a tree whose every
// path is a valid one inside the root, within the limits, or is refused,
// and never panics: the layer is what a registry hands over, trusted by
// nobody until it is.
func FuzzUnpack(f *testing.F) {
	for _, entries := range [][]tar.Header{
		{{Name: "deploy/app.yaml", Typeflag: tar.TypeReg, Size: 4}},
		{{Name: "./a/", Typeflag: tar.TypeDir}, {Name: "a/b.yaml", Typeflag: tar.TypeReg, Size: 4}},
		{{Name: "../escape.yaml", Typeflag: tar.TypeReg, Size: 4}},
		{{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		{{Name: "/abs.yaml", Typeflag: tar.TypeReg, Size: 4}},
	} {
		f.Add(layer(f, entries), true)
	}
	f.Add([]byte("not a layer"), false)
	f.Fuzz(func(t *testing.T, data []byte, gzipped bool) {
		mediaType := MediaTypeTar
		if gzipped {
			mediaType = MediaTypeTarGzip
		}
		const maxFile, maxTotal = 64, 256
		tr, err := unpack(data, mediaType, maxFile, maxTotal, time.Time{})
		if err != nil {
			return
		}
		var total int64
		err = fs.WalkDir(tr, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !fs.ValidPath(name) || strings.HasPrefix(name, "../") {
				t.Errorf("path %q leaves the root", name)
			}
			if d.Type().IsRegular() {
				data, err := fs.ReadFile(tr, name)
				if err != nil {
					return err
				}
				if len(data) > maxFile {
					t.Errorf("file %s holds %d bytes, over the limit", name, len(data))
				}
				total += int64(len(data))
			}
			return nil
		})
		if err != nil {
			t.Errorf("walk the tree: %v", err)
		}
		if total > maxTotal {
			t.Errorf("the tree holds %d bytes, over the limit", total)
		}
	})
}

// layer is a gzip tarball of entries, each regular file holding "x: 1".
func layer(tb testing.TB, entries []tar.Header) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if err := tw.WriteHeader(&h); err != nil {
			tb.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte("x: 1")[:h.Size]); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
