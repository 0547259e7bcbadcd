// Package helmtest makes Helm chart archives for tests, those a chart
// repository serves and a chart vendors under charts/: the usual layout
// of `helm package`, and archives it would never make (links, paths that
// leave the chart), to check that they are refused.
package helmtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"maps"
	"slices"
	"testing"
)

// Entry is one entry of an archive: a file holding Body or, when Link is
// set, a symbolic link to Link (a hard link when Hard is set too).
type Entry struct {
	Name, Body, Link string
	Hard             bool
}

// Archive packs entries, in their order, into a gzipped tar archive.
func Archive(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hd := &tar.Header{Name: e.Name, Mode: 0o644, Size: int64(len(e.Body)), Typeflag: tar.TypeReg}
		switch {
		case e.Link != "" && e.Hard:
			hd.Typeflag, hd.Linkname, hd.Size = tar.TypeLink, e.Link, 0
		case e.Link != "":
			hd.Typeflag, hd.Linkname, hd.Size = tar.TypeSymlink, e.Link, 0
		}
		if err := tw.WriteHeader(hd); err != nil {
			t.Fatalf("pack %s: %v", e.Name, err)
		}
		if hd.Typeflag != tar.TypeReg {
			continue
		}
		if _, err := tw.Write([]byte(e.Body)); err != nil {
			t.Fatalf("pack %s: %v", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("pack the archive: %v", err)
	}
	if err := zw.Close(); err != nil {
		t.Fatalf("pack the archive: %v", err)
	}
	return buf.Bytes()
}

// Chart packs the files of chart name (paths relative to the chart, such
// as "templates/cm.yaml") under the folder name/, sorted by path, as
// `helm package` lays out an archive.
func Chart(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	var entries []Entry
	for _, path := range slices.Sorted(maps.Keys(files)) {
		entries = append(entries, Entry{Name: name + "/" + path, Body: files[path]})
	}
	return Archive(t, entries...)
}
