package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
)

// errTooLarge is wrapped by the errors of a chart or an archive over the
// limits.
var errTooLarge = errors.New("over the size limit")

// budget counts what loading one chart read, against the limits.
type budget struct {
	lim         Limits
	bytes       int64
	files       int
	description string
}

// take counts one file of size n.
func (b *budget) take(name string, n int64) error {
	b.files++
	b.bytes += n
	switch {
	case n > b.lim.MaxFileBytes:
		return fmt.Errorf("%s: %s holds %d bytes, more than the %d a chart's file may: %w", b.description, name, n, b.lim.MaxFileBytes, errTooLarge)
	case b.bytes > b.lim.MaxChartBytes:
		return fmt.Errorf("%s: more than %d bytes once unpacked: %w", b.description, b.lim.MaxChartBytes, errTooLarge)
	case b.files > b.lim.MaxChartFiles:
		return fmt.Errorf("%s: more than %d files: %w", b.description, b.lim.MaxChartFiles, errTooLarge)
	}
	return nil
}

// loadGitChart loads the chart in directory dir of the repository,
// leaving out what its .helmignore names, as `helm package` does. The
// repository's file system resolves symlinks inside the repository and
// refuses those that leave it. It also returns a digest of every file
// read, for the render cache.
func loadGitChart(fsys fs.FS, dir string, lim Limits) (*chart.Chart, []*archive.BufferedFile, error) {
	b := &budget{lim: lim, description: "chart " + dir}
	rules := ignore.Empty()
	if data, err := fs.ReadFile(fsys, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", path.Join(dir, ignore.HelmIgnore), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read %s: %w", path.Join(dir, ignore.HelmIgnore), err)
	}
	rules.AddDefaults()
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(name, dir), "/")
		if rel == "" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if rules.Ignore(rel, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !info.Mode().IsRegular() {
			return nil
		}
		if err := b.take(rel, info.Size()); err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if isArchive(rel) {
			// A vendored dependency's archive is checked as a fetched one.
			if _, err := readArchive(data, lim, "vendored chart "+path.Join(dir, rel)); err != nil {
				return err
			}
		}
		files = append(files, &archive.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	c, err := loadFiles(files)
	return c, files, err
}

// loadArchive checks and loads a chart archive (.tgz).
func loadArchive(data []byte, lim Limits, description string) (*chart.Chart, error) {
	files, err := readArchive(data, lim, description)
	if err != nil {
		return nil, err
	}
	return loadFiles(files)
}

// loadFiles loads a chart from its files, turning a panic of the loader
// into an error so that no chart can bring the daemon down.
func loadFiles(files []*archive.BufferedFile) (c *chart.Chart, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("load the chart: the loader failed on this chart: %v", r)
		}
	}()
	c, err = loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load the chart: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("load the chart: Chart.yaml: %w", err)
	}
	return c, nil
}

// isArchive reports whether a chart's file is a vendored chart archive.
func isArchive(rel string) bool {
	return strings.HasPrefix(rel, "charts/") && strings.Count(rel, "/") == 1 && (strings.HasSuffix(rel, ".tgz") || strings.HasSuffix(rel, ".tar.gz"))
}

// readArchive unpacks a chart archive into memory, refusing what a chart
// archive must not hold: an entry whose path is absolute or leaves the
// chart's folder (a "tar slip"), a symlink, a hard link or any entry other
// than a file or a folder, and more than the limits allow once unpacked.
// Entries lose their first path element (the chart's folder), as Helm's
// loader reads them. Vendored archives inside (charts/*.tgz) are checked
// the same way.
func readArchive(data []byte, lim Limits, description string) ([]*archive.BufferedFile, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: not a gzip archive: %w", description, err)
	}
	defer zr.Close()
	b := &budget{lim: lim, description: description}
	tr := tar.NewReader(zr)
	var files []*archive.BufferedFile
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read the archive: %w", description, err)
		}
		switch hd.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return nil, fmt.Errorf("%s: entry %s is a link (to %s); a chart archive holds files only", description, hd.Name, hd.Linkname)
		default:
			return nil, fmt.Errorf("%s: entry %s is not a file; a chart archive holds files only", description, hd.Name)
		}
		rel, err := entryPath(hd.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %s %w", description, hd.Name, err)
		}
		if err := b.take(rel, hd.Size); err != nil {
			return nil, err
		}
		content, err := io.ReadAll(io.LimitReader(tr, hd.Size))
		if err != nil {
			return nil, fmt.Errorf("%s: read entry %s: %w", description, hd.Name, err)
		}
		if isArchive(rel) {
			if _, err := readArchive(content, lim, description+" "+rel); err != nil {
				return nil, err
			}
		}
		files = append(files, &archive.BufferedFile{Name: rel, Data: content})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: the archive holds no file", description)
	}
	return files, nil
}

// entryPath returns an archive entry's path inside the chart (without the
// chart's folder), or an error saying why it leaves it.
func entryPath(name string) (string, error) {
	if strings.Contains(name, "\\") {
		return "", errors.New("has a backslash in its path")
	}
	if path.IsAbs(name) {
		return "", errors.New("has an absolute path, which leaves the chart")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", errors.New("leaves the chart's folder (..)")
		}
	}
	clean := path.Clean(name)
	_, rel, ok := strings.Cut(clean, "/")
	if !ok || rel == "" {
		return "", errors.New("is not inside the chart's folder")
	}
	return rel, nil
}
