package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/workload"
)

// guard looks, beside workload.Wait and as often, at what Wait does not
// judge: a named workload that has no Deployment, and an awaited commit
// that the sync replaced by another. A look lists the Deployments of the
// named workloads only while some have none (a workload's sync does not
// change), and reads the record of each sync involved once.
type guard struct {
	client kubernetes.Interface
	cfg    workload.WaitConfig
	anc    ancestor
	out    io.Writer
	// found is the sync of each named workload that has a Deployment,
	// by name ("" for a workload of no sync).
	found map[string]string
	// syncs are the syncs involved, by name: the sync of --all, of
	// --sync-name, and of each workload found.
	syncs map[string]*syncGuard
}

// syncGuard is what the guard knows of one sync.
type syncGuard struct {
	name, namespace string
	// awaited is the commit the wait awaits in this sync: --commit, or
	// the commit the sync had applied at the first look.
	awaited string
	// target is the commit waited for now: awaited, or the latest
	// commit applied that contains it.
	target string
	// sawAwaited is set once the record named awaited as applied; said
	// is the last note printed.
	sawAwaited bool
	said       string
}

func newGuard(client kubernetes.Interface, cfg workload.WaitConfig, anc ancestor, out io.Writer) *guard {
	g := &guard{client: client, cfg: cfg, anc: anc, out: out, found: map[string]string{}, syncs: map[string]*syncGuard{}}
	if cfg.SyncName != "" {
		g.involve(cfg.SyncName)
	}
	return g
}

// involve adds sync name to the syncs involved.
func (g *guard) involve(name string) *syncGuard {
	sg, ok := g.syncs[name]
	if !ok {
		sg = &syncGuard{name: name, namespace: g.cfg.StatusNamespace, awaited: g.cfg.Commit, target: g.cfg.Commit}
		g.syncs[name] = sg
	}
	return sg
}

// look reads the workloads and the records once. It returns an error
// with the wait's exit code when a named workload is not found or the
// awaited commit was replaced by a history without it, and reports
// whether the commit waited for moved on to a descendant (see target):
// the caller then waits again, for commit.
func (g *guard) look(ctx context.Context) (bool, error) {
	absent, err := g.find(ctx)
	if err != nil {
		return false, err
	}
	recs := map[string]workload.Sync{}
	follow := false
	for _, name := range slices.Sorted(maps.Keys(g.syncs)) {
		sg := g.syncs[name]
		rec, ok, err := g.record(ctx, sg)
		if err != nil {
			return false, err
		}
		if !ok || rec.Commit == "" {
			continue // no record, or nothing applied yet: Wait says so
		}
		recs[name] = rec
		moved, err := g.judgeSync(ctx, sg, rec)
		if err != nil {
			return false, err
		}
		follow = follow || moved
	}
	if len(absent) > 0 {
		if err := g.judgeAbsent(ctx, absent, recs); err != nil {
			return false, exitCode(exitWaitNotFound, err)
		}
	}
	if follow && len(g.syncs) > 1 {
		return false, fmt.Errorf("the commit awaited in sync %s was replaced by a descendant, and this wait spans syncs %s: wait for the workloads of each sync on its own",
			g.followed(), strings.Join(slices.Sorted(maps.Keys(g.syncs)), ", "))
	}
	return follow, nil
}

// find lists the Deployments of the named workloads not found yet, and
// returns those still without one.
func (g *guard) find(ctx context.Context) ([]string, error) {
	var absent []string
	for _, name := range g.cfg.Names {
		if _, ok := g.found[name]; !ok {
			absent = append(absent, name)
		}
	}
	if len(absent) == 0 {
		return nil, nil
	}
	selector := fmt.Sprintf("%s in (%s)", contract.LabelWorkload, strings.Join(absent, ","))
	list, err := g.client.AppsV1().Deployments(g.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list the workloads' Deployments: %w", err)
	}
	for _, d := range list.Items {
		sync := d.Labels[contract.LabelSync]
		g.found[d.Labels[contract.LabelWorkload]] = sync
		if sync != "" {
			g.involve(sync)
		}
	}
	return slices.DeleteFunc(absent, func(name string) bool { _, ok := g.found[name]; return ok }), nil
}

// judgeSync judges the commit that sync sg applied, as its record rec
// says, against the awaited one. It reports whether the target moved to a
// descendant, and fails with exitWaitReplaced when a history without the
// awaited commit replaced it.
func (g *guard) judgeSync(ctx context.Context, sg *syncGuard, rec workload.Sync) (bool, error) {
	if sg.awaited == "" {
		sg.awaited, sg.target = rec.Commit, rec.Commit
	}
	a, err := g.anc.relate(ctx, sg.awaited, rec.Commit)
	if err != nil {
		g.note(sg, fmt.Sprintf("cannot tell whether commit %s contains %s yet: %v", revision.Short(rec.Commit), revision.Short(sg.awaited), oneLine(err)))
		return false, nil
	}
	switch a.rel {
	case relSame:
		sg.sawAwaited = true
	case relReplaced:
		return false, exitCode(exitWaitReplaced, replaced(sg.name, sg.awaited, a))
	case relContains:
		if revision.Names(rec.Commit, sg.target) {
			return false, nil
		}
		sg.target = rec.Commit
		fmt.Fprintf(g.out, "commit %s was replaced by its descendant %s; waiting for %s\n", revision.Short(sg.awaited), revision.Short(a.by), revision.Short(a.by))
		return true, nil
	case relUnknown:
		if sg.sawAwaited {
			g.note(sg, fmt.Sprintf("commit %s was replaced by %s; whether %s contains it takes the repository (--repo)",
				revision.Short(sg.awaited), revision.Short(rec.Commit), revision.Short(rec.Commit)))
		}
	}
	return false, nil
}

// judgeAbsent decides about the named workloads without a Deployment
// (see missing), from recs, the records of the syncs involved that
// applied a commit, or, when no sync is involved, of every sync whose
// record is in the status namespace (else the workloads' namespace, else
// any).
func (g *guard) judgeAbsent(ctx context.Context, absent []string, recs map[string]workload.Sync) error {
	var looks []recordLook
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		looks = append(looks, recordLook{sync: name, applied: recs[name].Commit, awaited: g.syncs[name].awaited})
	}
	if len(g.syncs) == 0 {
		all, err := g.allRecords(ctx)
		if err != nil {
			return err
		}
		for _, rec := range all {
			recs[rec.Name] = rec
			looks = append(looks, recordLook{sync: rec.Name, applied: rec.Commit, awaited: cmp.Or(g.cfg.Commit, rec.Commit)})
		}
	}
	for i, l := range looks {
		if l.applied != "" && l.awaited != "" {
			looks[i].ancestry, _ = g.anc.relate(ctx, l.awaited, l.applied) // unknown on a failure: the wait goes on
		}
	}
	for _, name := range absent {
		key := manifest.Key{Group: "apps", Kind: "Deployment", Namespace: g.cfg.Namespace, Name: name}
		for i := range looks {
			_, looks[i].listed = recs[looks[i].sync].Inventory[key]
		}
		if err := missing(g.cfg.Namespace, name, g.cfg.Commit, looks); err != nil {
			return err
		}
	}
	return nil
}

// record reads the record of sync sg: in the status namespace when it is
// known, else in the workloads' namespace, else wherever the only record
// of that name is. ok is false while there is none, or several.
func (g *guard) record(ctx context.Context, sg *syncGuard) (workload.Sync, bool, error) {
	if sg.namespace != "" {
		cm, err := g.client.CoreV1().ConfigMaps(sg.namespace).Get(ctx, contract.NamePrefix+sg.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return workload.Sync{}, false, nil
		}
		if err != nil {
			return workload.Sync{}, false, fmt.Errorf("read the record of sync %s: %w", sg.name, err)
		}
		rec, ok := workload.SyncOf(cm)
		return rec, ok, nil
	}
	for _, ns := range []string{g.cfg.Namespace, metav1.NamespaceAll} {
		recs, err := workload.FindSyncs(ctx, g.client, ns, sg.name)
		if err != nil {
			return workload.Sync{}, false, err
		}
		if len(recs) == 1 {
			sg.namespace = recs[0].Namespace
			return recs[0], true, nil
		}
		if len(recs) > 1 {
			return workload.Sync{}, false, nil // Wait asks for --status-namespace
		}
	}
	return workload.Sync{}, false, nil
}

// allRecords reads the records of every sync in the status namespace
// when it is given, else in the workloads' namespace, else anywhere.
func (g *guard) allRecords(ctx context.Context) ([]workload.Sync, error) {
	if g.cfg.StatusNamespace != "" {
		return workload.FindSyncs(ctx, g.client, g.cfg.StatusNamespace, "")
	}
	recs, err := workload.FindSyncs(ctx, g.client, g.cfg.Namespace, "")
	if err != nil || len(recs) > 0 {
		return recs, err
	}
	return workload.FindSyncs(ctx, g.client, metav1.NamespaceAll, "")
}

// commit is the commit the next Wait waits for: the target of the one
// sync involved once the guard knows it, else --commit.
func (g *guard) commit() string {
	if len(g.syncs) == 1 {
		for _, sg := range g.syncs {
			if sg.target != "" {
				return sg.target
			}
		}
	}
	return g.cfg.Commit
}

// followed names the syncs whose target moved on to a descendant.
func (g *guard) followed() string {
	var names []string
	for name, sg := range g.syncs {
		if sg.target != sg.awaited {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// replacement describes, for the wait's last line, the descendant that
// replaced the awaited commit: "" when it was not replaced.
func (g *guard) replacement() string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(g.syncs)) {
		if sg := g.syncs[name]; sg.target != sg.awaited {
			lines = append(lines, fmt.Sprintf("commit %s was replaced by its descendant %s; %s is Healthy", revision.Short(sg.awaited), revision.Short(sg.target), revision.Short(sg.target)))
		}
	}
	return strings.Join(lines, "\n")
}

// note prints a line about sync sg, once for each new text.
func (g *guard) note(sg *syncGuard, text string) {
	if text != sg.said {
		sg.said = text
		fmt.Fprintf(g.out, "sync %s: %s\n", sg.name, text)
	}
}
