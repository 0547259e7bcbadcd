//go:build image

package image

import (
	"bufio"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// The image's contract.
const (
	// nonroot is the user and group the image runs as.
	nonroot = "65532"
	// maxCompressedBytes bounds the image as a registry stores it. It is
	// 19.3 MB today (docs/image.md), almost all of it the binary: a
	// sudden jump past 32 MB means something unplanned went in.
	maxCompressedBytes = 32_000_000
	// writableExit is the exit code of runReadOnly's harness when the
	// root file system it was to make read-only takes a write.
	writableExit = 97
)

// build is bin/image/build.json, what hack/image built.
type build struct {
	Image   string `json:"image"`
	Builder string `json:"builder"`
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Bytes   int64  `json:"bytes"`
}

// imageConfig is the part of the image's OCI configuration the tests read.
type imageConfig struct {
	User       string            `json:"User"`
	Env        []string          `json:"Env"`
	Entrypoint []string          `json:"Entrypoint"`
	Cmd        []string          `json:"Cmd"`
	Labels     map[string]string `json:"Labels"`
}

// built reads what hack/image built, and checks that the test can run it.
func built(t *testing.T) build {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the image test runs the image in a mount namespace of its own and reads buildah's storage: run it as root (make test-image)")
	}
	raw, err := os.ReadFile(filepath.Join(kit.Root(t), "bin", "image", "build.json"))
	if err != nil {
		t.Fatalf("read what hack/image built: %v (build it first: make test-image)", err)
	}
	var b build
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("bin/image/build.json: %v", err)
	}
	if b.Builder != "buildah" {
		t.Fatalf("bin/image/build.json: the image was built with %s; the test runs a buildah build (make test-image)", b.Builder)
	}
	return b
}

// want returns the environment variable name, else what git says with
// args: the version or commit the image must have been built from.
func want(t *testing.T, name string, args ...string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = kit.Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// buildah runs buildah on the project's image storage.
func buildah(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(kit.Root(t), "hack", "image"), append([]string{"buildah"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// config reads the image's configuration.
func config(t *testing.T, image string) imageConfig {
	t.Helper()
	var inspect struct {
		OCIv1 struct {
			Config imageConfig `json:"config"`
		} `json:"OCIv1"`
	}
	if err := json.Unmarshal([]byte(buildah(t, "inspect", "--type", "image", image)), &inspect); err != nil {
		t.Fatalf("read the configuration of %s: %v", image, err)
	}
	return inspect.OCIv1.Config
}

// container makes a working container of image, mounts its root file
// system, and returns the container and the mount; both go at cleanup.
func container(t *testing.T, image string) (string, string) {
	t.Helper()
	ctr := buildah(t, "from", "--pull-never", image)
	t.Cleanup(func() { buildah(t, "rm", ctr) })
	return ctr, buildah(t, "mount", ctr)
}

// runReadOnly runs args in rootfs as the image's user would run under a
// container runtime with readOnlyRootFilesystem: in mount, PID, IPC, UTS
// and network namespaces of its own, with rootfs bind-mounted read-only
// and chrooted into, as uid and gid 65532, with only env. The harness
// first checks that rootfs refuses a write (exit writableExit if not).
func runReadOnly(t *testing.T, rootfs string, env []string, args ...string) (string, error) {
	t.Helper()
	const harness = `root=$1; shift
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
if (: >"$root/.written") 2>/dev/null; then echo "the root file system takes writes" >&2; exit 97; fi
exec env -i "$@"`
	chroot, err := exec.LookPath("chroot")
	if err != nil {
		t.Fatalf("find chroot: %v", err)
	}
	cmdArgs := []string{"--mount", "--propagation", "private", "--pid", "--fork", "--ipc", "--uts", "--net",
		"--", "sh", "-ec", harness, "sh", rootfs}
	cmdArgs = append(cmdArgs, env...)
	cmdArgs = append(cmdArgs, chroot, "--userspec="+nonroot+":"+nonroot, rootfs)
	cmd := exec.Command("unshare", append(cmdArgs, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == writableExit {
		t.Fatalf("the image's root file system was not made read-only: %s", out)
	}
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %q in the image (unshare, mount and chroot, as root): %v\n%s", args, err, out)
	}
	return string(out), err
}

// TestImageConfig checks what a runtime reads of the image: its user, its
// command and its labels.
func TestImageConfig(t *testing.T) {
	b := built(t)
	cfg := config(t, b.Image)
	if cfg.User != nonroot+":"+nonroot {
		t.Errorf("the image runs as %q; want %s:%s", cfg.User, nonroot, nonroot)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/plimsoll"}) || !slices.Equal(cfg.Cmd, []string{"run"}) {
		t.Errorf("the image runs %q %q; want [/plimsoll] [run]", cfg.Entrypoint, cfg.Cmd)
	}
	for key, value := range map[string]string{
		"org.opencontainers.image.version":  want(t, "PLIMSOLL_IMAGE_VERSION", "describe", "--tags", "--always", "--dirty"),
		"org.opencontainers.image.revision": want(t, "PLIMSOLL_IMAGE_COMMIT", "rev-parse", "HEAD"),
	} {
		if got := cfg.Labels[key]; got != value {
			t.Errorf("label %s is %q; want %q", key, got, value)
		}
	}
	source, err := url.Parse(cfg.Labels["org.opencontainers.image.source"])
	if err != nil || source.Host == "" || source.User != nil {
		t.Errorf("label org.opencontainers.image.source is %q; want a URL with a host and no credentials", cfg.Labels["org.opencontainers.image.source"])
	}
	if b.Bytes <= 0 || b.Bytes > maxCompressedBytes {
		t.Errorf("the image is %d bytes compressed; want at most %d", b.Bytes, maxCompressedBytes)
	}
	t.Logf("%s: %.1f MB compressed", b.Image, float64(b.Bytes)/1e6)
}

// TestImageFiles checks the image's files, all of them: the binary, the
// CA certificates, the nonroot user, /tmp, and nothing else (no shell).
func TestImageFiles(t *testing.T) {
	b := built(t)
	_, rootfs := container(t, b.Image)
	got := map[string]fs.FileMode{}
	var unpacked int64
	err := filepath.WalkDir(rootfs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == rootfs {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rootfs, path)
		got["/"+rel] = info.Mode()
		unpacked += info.Size()
		return nil
	})
	if err != nil {
		t.Fatalf("walk the image's files: %v", err)
	}
	want := map[string]fs.FileMode{
		"/plimsoll":                          0o755,
		"/etc":                               fs.ModeDir | 0o755,
		"/etc/passwd":                        0o644,
		"/etc/group":                         0o644,
		"/etc/ssl":                           fs.ModeDir | 0o755,
		"/etc/ssl/certs":                     fs.ModeDir | 0o755,
		"/etc/ssl/certs/ca-certificates.crt": 0o644,
		"/tmp":                               fs.ModeDir | fs.ModeSticky | 0o777,
	}
	for path, mode := range want {
		if m, ok := got[path]; !ok {
			t.Errorf("the image has no %s", path)
		} else if m != mode {
			t.Errorf("%s has mode %v; want %v", path, m, mode)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("the image has %s, which is not among its files", path)
		}
	}
	t.Logf("%s: %.1f MB unpacked", b.Image, float64(unpacked)/1e6)

	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "\nnonroot:x:"+nonroot+":"+nonroot+":") {
		t.Errorf("/etc/passwd names no nonroot user %s:\n%s", nonroot, passwd)
	}
	pem, err := os.ReadFile(filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		t.Error("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
}

// TestImageRunsNonrootOnReadOnlyRoot runs the image's binary as 65532 on
// a read-only root: `version` prints the commit the image was built from,
// `run --help` works, and the image's own command is the daemon (which
// wants --repo). Then buildah runs `version` in the image as its
// configuration says.
func TestImageRunsNonrootOnReadOnlyRoot(t *testing.T) {
	b := built(t)
	cfg := config(t, b.Image)
	ctr, rootfs := container(t, b.Image)
	commit := want(t, "PLIMSOLL_IMAGE_COMMIT", "rev-parse", "HEAD")
	version := want(t, "PLIMSOLL_IMAGE_VERSION", "describe", "--tags", "--always", "--dirty")

	out, err := runReadOnly(t, rootfs, cfg.Env, append(cfg.Entrypoint, "version", "-o", "json")...)
	if err != nil {
		t.Fatalf("plimsoll version: %v\n%s", err, out)
	}
	var info struct{ Version, Commit string }
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("plimsoll version -o json printed %q: %v", out, err)
	}
	if info.Commit != commit || info.Version != version {
		t.Errorf("plimsoll version in the image says version %q, commit %q; want %q, %q", info.Version, info.Commit, version, commit)
	}

	out, err = runReadOnly(t, rootfs, cfg.Env, append(cfg.Entrypoint, "run", "--help")...)
	if err != nil || !strings.Contains(out, "--repo") || !strings.Contains(out, "--cache-dir") {
		t.Errorf("plimsoll run --help: %v\n%s", err, out)
	}

	out, err = runReadOnly(t, rootfs, cfg.Env, slices.Concat(cfg.Entrypoint, cfg.Cmd)...)
	if err == nil || !strings.Contains(out, "--repo (a Git repository) or --oci-repository (an OCI artifact) is required") {
		t.Errorf("the image's own command with no flags: %v\n%s\nwant the daemon refusing to start without a source", err, out)
	}

	out = buildah(t, "run", "--isolation", "chroot", ctr, "--", "/plimsoll", "version")
	if !strings.Contains(out, "commit "+commit) {
		t.Errorf("buildah run plimsoll version: %q; want commit %s", out, commit)
	}
}

// TestSBOMListsTheBinarysModules checks the SBOM beside the image against
// `go version -m` of the image's binary: the same modules at the same
// versions, and the Go that built it.
func TestSBOMListsTheBinarysModules(t *testing.T) {
	b := built(t)
	_, rootfs := container(t, b.Image)
	out, err := exec.Command("go", "version", "-m", filepath.Join(rootfs, "plimsoll")).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	var want []string
	var goVersion string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && strings.HasSuffix(f[0], ":"):
			goVersion = strings.TrimPrefix(f[1], "go")
		case len(f) >= 3 && f[0] == "dep":
			want = append(want, f[1]+"@"+f[2])
		case len(f) >= 3 && f[0] == "=>":
			want[len(want)-1] = f[1] + "@" + f[2]
		}
	}
	raw, err := os.ReadFile(filepath.Join(kit.Root(t), "bin", "image", "plimsoll.spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			SPDXID      string `json:"SPDXID"`
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("bin/image/plimsoll.spdx.json: %v", err)
	}
	var got []string
	var main, stdlib string
	for _, p := range doc.Packages {
		switch p.SPDXID {
		case "SPDXRef-Package-main":
			main = p.Name + "@" + p.VersionInfo
		case "SPDXRef-Package-stdlib":
			stdlib = p.VersionInfo
		default:
			got = append(got, p.Name+"@"+p.VersionInfo)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if doc.SPDXVersion != "SPDX-2.3" || len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the SBOM (%s) lists %d modules, go version -m %d:\nSBOM:  %q\nbinary: %q", doc.SPDXVersion, len(got), len(want), got, want)
	}
	if main != module+"@"+b.Version || stdlib != goVersion {
		t.Errorf("the SBOM describes %s with Go %s; want %s@%s with Go %s", main, stdlib, module, b.Version, goVersion)
	}
}

// TestValuesNameTheBuiltImage checks the Helm values written beside the
// image: they point the chart at it.
func TestValuesNameTheBuiltImage(t *testing.T) {
	b := built(t)
	raw, err := os.ReadFile(filepath.Join(kit.Root(t), "bin", "image", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("bin/image/values.yaml: %v", err)
	}
	if got := values.Image.Repository + ":" + values.Image.Tag; got != b.Image {
		t.Errorf("bin/image/values.yaml names %s; the image built is %s", got, b.Image)
	}
}
