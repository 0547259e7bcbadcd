// Package manifest turns the files of one Git commit into validated
// Kubernetes objects.
//
// Render reads a tree of plain YAML and JSON manifests, building with
// kustomize any directory that holds a kustomization, and Validate checks the
// result against the cluster's discovery before anything is applied. Both are
// pure: they take a read-only file system and values, and return objects or
// errors. Every problem with the input is reported as an *Error naming the
// file, the document and, where one is at fault, the field. Errors do not
// show Secret values: this package's messages never quote a value, and
// kustomize's are cleaned of the Secret values its build read.
package manifest

import "plimsoll.dev/plimsoll/contract"

// Defaults, kinds, YAML tags and fixed texts of the package.
const (
	// DefaultMaxDocuments is the number of YAML documents and List items one
	// render may read when Limits.MaxDocuments is not set.
	DefaultMaxDocuments = 10000
	// DefaultMaxDepth is how deeply maps and lists may nest in one document
	// when Limits.MaxDepth is not set.
	DefaultMaxDepth = 64
	// DefaultMaxAliasNodes is how many values YAML aliases may add to one
	// document, once expanded, when Limits.MaxAliasNodes is not set.
	DefaultMaxAliasNodes = 10000

	// kindList and listAPIVersion mark a v1 List, whose items are read as
	// objects of their own.
	kindList       = "List"
	listAPIVersion = "v1"

	// crdGroup and crdKind identify a CustomResourceDefinition.
	crdGroup = "apiextensions.k8s.io"
	crdKind  = "CustomResourceDefinition"
	// scopeNamespaced and scopeCluster are the values of a
	// CustomResourceDefinition's spec.scope.
	scopeNamespaced = "Namespaced"
	scopeCluster    = "Cluster"

	// ChartAPIVersion and ChartReleaseKind mark a chart release document:
	// a Helm chart to render, with its values, declared in Git.
	ChartAPIVersion  = contract.APIVersion
	ChartReleaseKind = contract.KindHelmChart
	// chartFile makes a directory a Helm chart.
	chartFile = "Chart.yaml"
	// The Helm hook events a sync runs, the values of Hook.Events: the
	// install events on a release's first sync, the upgrade events on a
	// sync that changes it.
	HookPreInstall  = "pre-install"
	HookPostInstall = "post-install"
	HookPreUpgrade  = "pre-upgrade"
	HookPostUpgrade = "post-upgrade"

	// kindSecret is the kind whose data never appears in an error.
	kindSecret = "Secret"

	// redacted replaces Secret values found in messages from kustomize.
	redacted = "[redacted]"
	// minRedactLen is the shortest Secret value searched for in messages
	// from kustomize: shorter values match ordinary words and are not
	// secrets worth the name.
	minRedactLen = 4
	// nodeDumpMarker starts the part of a kustomize error that prints a
	// whole YAML node, which may hold Secret data; it is cut off.
	nodeDumpMarker = "node contents:"

	// YAML tags the converter treats specially.
	tagNull  = "!!null"
	tagBool  = "!!bool"
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagMerge = "!!merge"

	// sizeCap bounds the expanded sizes of YAML nodes, so that their sums
	// never overflow.
	sizeCap = 1 << 40
)

// kustomizationFiles are the names that make a directory a kustomization,
// in the order kustomize looks for them.
var kustomizationFiles = [...]string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// manifestExtensions are the file name extensions Render reads.
var manifestExtensions = [...]string{".yaml", ".yml", ".json"}
