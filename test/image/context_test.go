package image

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// module is the path of the Go module the binary belongs to.
const module = "plimsoll.dev/plimsoll"

// goPackage is what the build needs of one package: where it is and the
// files it is built from.
type goPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	EmbedFiles []string
	Module     *struct{ Path string }
}

// binaryPackages lists the packages of this module that the binary is
// built from, with their files, as go list reads them in dir.
func binaryPackages(t *testing.T, dir string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,EmbedFiles,Module", "./cmd/plimsoll")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list the binary's packages in %s: %v", dir, err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("read go list's output: %v", err)
		}
		if p.Module != nil && p.Module.Path == module {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// TestBuildCopiesEveryPackageTheBinaryImports lays out the build context
// as the image build sees it (hack/image context, by .dockerignore) and
// checks that every file of every package of this module that the binary
// is built from is in it, then that the binary's packages resolve there.
func TestBuildCopiesEveryPackageTheBinaryImports(t *testing.T) {
	repo, ctx := kit.Root(t), t.TempDir()
	cmd := exec.Command(filepath.Join(repo, "hack", "image"), "context", ctx)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/image context: %v\n%s", err, out)
	}
	pkgs := binaryPackages(t, repo)
	if len(pkgs) < 2 {
		t.Fatalf("go list found %d packages of %s in the binary; want the command and what it imports", len(pkgs), module)
	}
	for _, p := range pkgs {
		rel, err := filepath.Rel(repo, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range slices.Concat(p.GoFiles, p.EmbedFiles) {
			if _, err := os.Stat(filepath.Join(ctx, rel, f)); err != nil {
				top := strings.Split(filepath.ToSlash(rel), "/")[0]
				t.Errorf("%s/%s (package %s, which the binary imports) is not in the image's build: add !%s/ to .dockerignore", rel, f, p.ImportPath, top)
			}
		}
	}
	if t.Failed() {
		return
	}
	cmd = exec.Command("go", "list", "-e", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", "./cmd/plimsoll")
	cmd.Dir = ctx
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("the binary's packages do not resolve in the image's build context: %v\n%s", err, out)
	}
}

// TestDockerfileCopiesTheWholeContext checks that the Dockerfile copies
// the build context whole, so that .dockerignore alone says what goes in,
// and that its last stage takes the image's files from the rootfs stage
// only (the stage hack/image replaces when it builds with buildah).
func TestDockerfileCopiesTheWholeContext(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(kit.Root(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]string // the COPY instructions of each stage
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			stages = append(stages, nil)
		case "COPY", "ADD":
			if len(stages) == 0 {
				t.Fatalf("Dockerfile: %q before any FROM", line)
			}
			stages[len(stages)-1] = append(stages[len(stages)-1], strings.Join(fields, " "))
		}
	}
	want := [][]string{
		{"COPY go.mod go.sum ./", "COPY . ."},
		{"COPY --from=rootfs /rootfs/ /"},
	}
	if !slices.EqualFunc(stages, want, slices.Equal) {
		t.Errorf("the Dockerfile's stages copy %q; want %q: the build stage copies what .dockerignore lets in, whole, and the image takes its files from the rootfs stage", stages, want)
	}
}

// TestChartNamesTheReleaseImage checks that the chart's default image is
// the one a release build makes: the repository hack/image names by
// default, tagged with the chart's appVersion (the release's tag).
func TestChartNamesTheReleaseImage(t *testing.T) {
	repo := kit.Root(t)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	for file, into := range map[string]any{"Chart.yaml": &chart, "values.yaml": &values} {
		raw, err := os.ReadFile(filepath.Join(repo, "charts", "plimsoll", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatalf("charts/plimsoll/%s: %v", file, err)
		}
	}
	cmd := exec.Command(filepath.Join(repo, "hack", "image"), "ref")
	cmd.Env = append(withoutImageEnv(os.Environ()), "VERSION="+chart.AppVersion)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/image ref: %v", err)
	}
	built := strings.TrimSpace(string(out))
	if values.Image.Tag != "" {
		t.Errorf("charts/plimsoll/values.yaml: image.tag is %q; want empty, so that the chart's appVersion names the image", values.Image.Tag)
	}
	if got := values.Image.Repository + ":" + chart.AppVersion; got != built {
		t.Errorf("the chart's default image is %s; a release build of %s makes %s", got, chart.AppVersion, built)
	}
}

// withoutImageEnv is env without the variables that name another image.
func withoutImageEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "IMAGE" || name == "IMAGE_REPOSITORY" || name == "IMAGE_TAG"
	})
}
