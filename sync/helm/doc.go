// Package helm renders Helm charts in-process, with the Helm v4 library,
// for the sync: charts kept in Git and charts fetched from HTTP chart
// repositories or OCI registries, named by release documents in Git.
//
// Renderer implements manifest.Charts. It renders as `helm template`
// does, with the cluster's version and API versions as capabilities, and
// keeps no Helm release: the sync's inventory is the release record. It
// splits the output into objects, hooks (run by the sync around its
// apply) and the CustomResourceDefinitions of crds/, checks that a render
// is deterministic, and bounds what it reads: archives, indexes and
// unpacked charts have size limits, and an archive entry that leaves the
// chart or is a link is refused.
package helm

import (
	"cmp"
	"time"
)

// Defaults and fixed names of the package.
const (
	// DefaultHookTimeout bounds how long a sync waits for one hook when
	// the release sets no spec.hookTimeout.
	DefaultHookTimeout = 5 * time.Minute
	// DefaultMaxArchiveBytes bounds a chart archive as fetched: 10 MiB.
	// ingress-nginx 4.15.1 packs into 54 KiB (345 KiB unpacked), so a
	// chart about 190 times its size still fits, and a hostile
	// repository makes the daemon hold 10 MiB at most.
	DefaultMaxArchiveBytes = 10 << 20
	// DefaultMaxIndexBytes bounds an HTTP repository's index.yaml. The
	// largest public indexes (bitnami's before it was pruned) passed
	// 50 MiB; a team's own repository holds a few hundred KiB.
	DefaultMaxIndexBytes = 64 << 20
	// DefaultMaxChartBytes bounds a chart once unpacked, all its files
	// and vendored dependencies together.
	DefaultMaxChartBytes = 50 << 20
	// DefaultMaxFileBytes bounds one file of a chart.
	DefaultMaxFileBytes = 5 << 20
	// DefaultMaxChartFiles bounds the files of one chart.
	DefaultMaxChartFiles = 10000
	// maxManifestBytes bounds an OCI manifest.
	maxManifestBytes = 4 << 20

	// maxReleaseName is Helm's limit on a release name.
	maxReleaseName = 53

	// Helm's annotations on rendered objects.
	annotationHook           = "helm.sh/hook"
	annotationHookWeight     = "helm.sh/hook-weight"
	annotationHookDelete     = "helm.sh/hook-delete-policy"
	annotationResourcePolicy = "helm.sh/resource-policy"
	resourcePolicyKeep       = "keep"

	// The test hook events, which a sync leaves out (the events it runs
	// are manifest.HookPreInstall...).
	eventTest        = "test"
	eventTestSuccess = "test-success"

	// The hook delete policies.
	DeleteBeforeCreation = "before-hook-creation"
	DeleteSucceeded      = "hook-succeeded"
	DeleteFailed         = "hook-failed"

	// The OCI media types of a Helm chart.
	mediaTypeChart  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	mediaTypeConfig = "application/vnd.cncf.helm.config.v1+json"

	// notesSuffix names the templates that are notes, not manifests.
	notesSuffix = "NOTES.txt"
	// postRenderInput is the file the post-render's kustomization reads.
	postRenderInput = "chart.yaml"
	// cacheDirName is the folder of fetched archives under the cache.
	cacheDirName = "charts"
)

// Limits bound what fetching and loading one chart may read. Zero values
// take the defaults.
type Limits struct {
	MaxArchiveBytes int64
	MaxIndexBytes   int64
	MaxChartBytes   int64
	MaxFileBytes    int64
	MaxChartFiles   int
}

// withDefaults fills in the defaults of the limits left at zero.
func (l Limits) withDefaults() Limits {
	l.MaxArchiveBytes = cmp.Or(l.MaxArchiveBytes, DefaultMaxArchiveBytes)
	l.MaxIndexBytes = cmp.Or(l.MaxIndexBytes, DefaultMaxIndexBytes)
	l.MaxChartBytes = cmp.Or(l.MaxChartBytes, DefaultMaxChartBytes)
	l.MaxFileBytes = cmp.Or(l.MaxFileBytes, DefaultMaxFileBytes)
	l.MaxChartFiles = cmp.Or(l.MaxChartFiles, DefaultMaxChartFiles)
	return l
}
