// Package revision names what a sync applies: a Git commit (40 or 64 hex
// digits) or an OCI artifact's manifest digest ("sha256:" and 64 hex
// digits). Both stand in the same places (the sync status, a workload's
// commit annotation, notifications); this package is how every part of
// plimsoll shows one short.
package revision

import "strings"

// ShortLen is how many digits of a revision a short form keeps, as git
// shows a commit.
const ShortLen = 7

// Short is id shortened for people: a commit's first 7 digits
// ("1a2b3c4"), a digest's algorithm and the first 7 digits of its hex
// ("sha256:1a2b3c4"), so that the two never look alike. Anything shorter
// is returned as it is.
func Short(id string) string {
	algo, hex, ok := strings.Cut(id, ":")
	if !ok {
		return id[:min(len(id), ShortLen)]
	}
	return algo + ":" + hex[:min(len(hex), ShortLen)]
}

// Names reports whether full, a whole commit or digest, is what id
// names: id given in full or as a prefix at least as long as full's short
// form (7 hex digits of a commit, the algorithm and 7 of a digest), as
// git takes an abbreviated commit.
func Names(full, id string) bool {
	return len(id) >= len(Short(full)) && strings.HasPrefix(full, id)
}

// IsDigest reports whether id is an artifact's digest rather than a
// commit: it names its algorithm.
func IsDigest(id string) bool { return strings.Contains(id, ":") }

// Noun is what id is, for messages: "artifact" for a digest, "commit"
// otherwise.
func Noun(id string) string {
	if IsDigest(id) {
		return "artifact"
	}
	return "commit"
}
