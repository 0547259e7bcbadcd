package main

import (
	"fmt"
	"strings"

	"plimsoll.dev/plimsoll/internal/revision"
)

// Exit codes of plimsoll wait (docs/ui.md): a failed rollout or commit
// exits 1, as any error does.
const (
	// exitWaitTimeout: --timeout passed before every workload ended.
	exitWaitTimeout = 2
	// exitWaitNotFound: a named workload has no Deployment, and the
	// commit its sync applied (the awaited one, or one that contains it)
	// has none either.
	exitWaitNotFound = 3
	// exitWaitReplaced: the awaited commit left the branch for a history
	// without it (a force-push, a rewind); the sync will never apply it.
	exitWaitReplaced = 4
)

// relation is how the commit a sync applied stands to the commit a wait
// awaits in it.
type relation int

// The relations, from what the sync's record and the repository say.
const (
	// relUnknown: the applied commit is another one, and there is no
	// repository to tell how the two stand (or it could not tell).
	relUnknown relation = iota
	// relSame: the applied commit is the awaited one.
	relSame
	// relContains: the applied commit descends from the awaited one,
	// which it replaced (pushed over it before it was applied, or while
	// its rollout went on).
	relContains
	// relPending: the awaited commit is on the branch and not applied
	// yet: the applied commit is older.
	relPending
	// relReplaced: the awaited commit is on the branch no more, and the
	// applied commit does not contain it.
	relReplaced
)

// ancestry is what a wait knows of a sync's applied commit next to the
// awaited one: the relation and, for relContains and relReplaced, the
// commit that replaced the awaited one.
type ancestry struct {
	rel relation
	by  string
}

// relate decides how applied stands to awaited from the repository's two
// answers: contains, whether applied descends from awaited; onBranch,
// whether the branch's head, head, does. Worked through for a branch
// a1 <- x2 awaited by the wait:
//
//   - the sync applied x2: relSame (decided before the repository is
//     asked, see repoAncestry.relate);
//   - y3 pushed on x2 before the sync applied x2, and applied: contains,
//     relContains by y3;
//   - the sync still at a1, head x2 or y3: onBranch, relPending;
//   - z2 force-pushed on a1 (x2 dropped), applied or not yet: neither,
//     relReplaced by the head z2.
func relate(awaited, applied, head string, contains, onBranch bool) ancestry {
	switch {
	case revision.Names(applied, awaited):
		return ancestry{rel: relSame}
	case contains:
		return ancestry{rel: relContains, by: applied}
	case onBranch:
		return ancestry{rel: relPending}
	}
	return ancestry{rel: relReplaced, by: head}
}

// recordLook is one sync record as a wait for a missing workload reads
// it: the sync, the commit it applied and the one awaited there, how the
// two stand, and whether its inventory lists the workload's Deployment.
type recordLook struct {
	sync, applied, awaited string
	ancestry               ancestry
	listed                 bool
}

// missing decides about a named workload that has no Deployment, given
// the records of the syncs that could apply it. It is not found once a
// sync has applied the awaited commit, or one that contains it, and no
// record lists the workload: then the error names the workload, its
// namespace and each commit looked at. Until then (no sync has applied
// the commit: the commit may add it; or a record lists it: the sync is
// creating it, or will restore it) the wait goes on, and missing returns
// nil. Without records, a wait for a given commit goes on (the sync has
// not run yet); one for the applied commit (awaited "") has nothing to
// wait for.
func missing(ns, name, awaited string, looks []recordLook) error {
	var applied []string
	for _, l := range looks {
		if l.listed {
			return nil
		}
		switch l.ancestry.rel {
		case relSame:
			applied = append(applied, fmt.Sprintf("commit %s applied by sync %s", revision.Short(l.applied), l.sync))
		case relContains:
			applied = append(applied, fmt.Sprintf("commit %s applied by sync %s (it contains %s)", revision.Short(l.applied), l.sync, revision.Short(l.awaited)))
		}
	}
	switch {
	case len(applied) > 0:
		return fmt.Errorf("workload %q not found in namespace %s: it has no Deployment, and the %s has none of that name",
			name, ns, strings.Join(applied, ", nor the "))
	case len(looks) == 0 && awaited == "":
		return fmt.Errorf("workload %q not found in namespace %s: it has no Deployment, and no sync record was found to wait on", name, ns)
	}
	return nil
}

// replaced is the error of a wait whose awaited commit a history without
// it replaced.
func replaced(sync, awaited string, a ancestry) error {
	return fmt.Errorf("commit %s was replaced by %s, which does not contain it (the branch was force-pushed or rewound, or %s was never pushed to it): sync %s will not apply %s",
		revision.Short(awaited), revision.Short(a.by), revision.Short(awaited), sync, revision.Short(awaited))
}

// Lengths of a commit's name.
const (
	// sha1Hex and sha256Hex are a commit's full name in a SHA-1 and a
	// SHA-256 repository: what --commit must be with --repo, whose
	// clone is asked by full name.
	sha1Hex   = 40
	sha256Hex = 64
)
