package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	psync "plimsoll.dev/plimsoll/sync"
)

// How Wait looks.
const (
	// waitLook is how often Wait reads the workloads and their syncs:
	// one list of Deployments and one read of each sync record a look.
	waitLook = time.Second
	// minCommitPrefix is the shortest commit prefix a wait takes: the
	// length of the short commits in messages and Events.
	minCommitPrefix = 7
)

// ErrWaitTimeout is wrapped by the error of a Wait whose timeout passed
// before every workload ended.
var ErrWaitTimeout = errors.New("timed out")

// commitPattern is a commit id or a prefix of one, or an artifact's
// digest (sha256:...) or a prefix of one.
var commitPattern = regexp.MustCompile(`^(sha256:)?[0-9a-f]{7,64}$`)

// WaitConfig says what Wait waits for.
type WaitConfig struct {
	// Namespace is where the workloads are; metav1.NamespaceAll with
	// All reads every namespace.
	Namespace string
	// Names are the workloads to wait for. Without names, All waits for
	// every workload of sync SyncName.
	Names    []string
	All      bool
	SyncName string
	// StatusNamespace is where the syncs' records are; "" looks in the
	// workload's namespace, then in any namespace.
	StatusNamespace string
	// Commit is the commit (or a prefix of at least 7 characters) whose
	// templates the workloads must run; "" is the commit each sync had
	// applied when the wait began.
	Commit  string
	Timeout time.Duration
	// Out gets a line per workload as it ends, and a line when a commit
	// is held or not applied yet.
	Out io.Writer
}

// Validate refuses a configuration Wait cannot act on.
func (c WaitConfig) Validate() error {
	switch {
	case len(c.Names) == 0 && !c.All:
		return errors.New("name the workloads to wait for, or --all for every workload of a sync")
	case len(c.Names) > 0 && c.All:
		return errors.New("--all waits for every workload of the sync; name no workload with it")
	case c.All && c.SyncName == "":
		return errors.New("--all needs the sync's name (--sync-name)")
	case c.Commit != "" && !commitPattern.MatchString(c.Commit):
		return fmt.Errorf("--commit %q: want a commit id in lowercase hex, at least %d characters (or an artifact's digest, sha256: and as many)", c.Commit, minCommitPrefix)
	case c.Timeout <= 0:
		return fmt.Errorf("--timeout %s: want a positive duration", c.Timeout)
	}
	return nil
}

// End is how a workload's rollout ended for a wait; "" while it goes on.
type End string

// The ends of a rollout.
const (
	EndHealthy End = "Healthy"
	EndFailed  End = "Failed"
)

// Wait waits until each workload runs the template of the commit
// (WaitConfig.Commit, or the commit its sync had applied when the wait
// began) and is Healthy there, printing a line for each as it ends. It
// returns an error at once when a workload is Degraded or the sync failed
// to apply the commit, naming them, and one wrapping ErrWaitTimeout when
// the timeout passes first, naming those still rolling.
//
// A workload ends for a commit only once its sync's record says that the
// commit was applied: a Healthy status from before (the previous revision)
// never ends a wait. Then a workload whose revision came from the commit
// (plimsoll.dev/commit) ends with its status; one whose revision came from
// an earlier commit is one that the commit left as it was (its template
// did not change, and the controller writes nothing then), and ends with
// its status from the next look on: the controller takes a commit's
// Deployments before the sync records the commit, and a new revision's
// status is its first write.
func Wait(ctx context.Context, client kubernetes.Interface, cfg WaitConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	w := &waiter{client: client, cfg: cfg, syncs: map[string]*syncWatch{}, ended: map[string]End{}}
	// The timeout is a timer, not a deadline on ctx: a read that a
	// deadline would cut short (the client's rate limiter refuses ahead
	// of one) is not a failure to read.
	deadline := time.NewTimer(cfg.Timeout)
	defer deadline.Stop()
	look := time.NewTicker(waitLook)
	defer look.Stop()
	for {
		if done, err := w.look(ctx); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w after %s waiting for %s", ErrWaitTimeout, cfg.Timeout, strings.Join(w.rolling, "; "))
		case <-look.C:
		}
	}
}

// waiter is one Wait between two looks.
type waiter struct {
	client kubernetes.Interface
	cfg    WaitConfig
	// syncs are the records of the syncs seen, by namespace/name of the
	// workload's sync ("" for workloads of no sync).
	syncs map[string]*syncWatch
	// ended are the workloads that ended, by namespace/name; rolling
	// describes the others as the last whole look saw them.
	ended   map[string]End
	rolling []string
	looks   int
}

// syncWatch is what a wait knows of one sync's record.
type syncWatch struct {
	name, namespace string
	// commit is the commit the wait waits for in this sync.
	commit string
	// appliedAt is the look at which the record first showed the commit
	// applied, 0 before.
	appliedAt int
	// failed is why the sync did not apply the commit; said is the last
	// note printed about it.
	failed, said string
	// templates are the template hashes of the commit's Deployments, by
	// namespace/name, when the record that showed it applied has them.
	templates map[string]string
}

// look reads the workloads and their syncs once, prints what ended, and
// reports whether all have.
func (w *waiter) look(ctx context.Context) (bool, error) {
	w.looks++
	workloads, err := w.workloads(ctx)
	if err != nil {
		return false, err
	}
	var rolling []string
	var failed []string
	for _, name := range w.cfg.Names {
		if !slices.ContainsFunc(workloads, func(wl Workload) bool { return wl.Name == name }) {
			rolling = append(rolling, fmt.Sprintf("%s/%s (no Deployment yet)", w.cfg.Namespace, name))
		}
	}
	for _, wl := range workloads {
		key := wl.key()
		if end, ok := w.ended[key]; ok {
			if end == EndFailed {
				failed = append(failed, key)
			}
			continue
		}
		sw, err := w.syncOf(ctx, wl)
		if err != nil {
			return false, err
		}
		if sw.failed != "" {
			return false, fmt.Errorf("%s: sync %s did not apply commit %s: %s", key, sw.name, revision.Short(sw.commit), sw.failed)
		}
		end, why := judge(wl, sw.commit, sw.templates[key], sw.appliedAt > 0, sw.appliedAt > 0 && w.looks > sw.appliedAt)
		if end == "" {
			rolling = append(rolling, fmt.Sprintf("%s (%s)", key, why))
			continue
		}
		w.ended[key] = end
		fmt.Fprintf(w.cfg.Out, "%s %s: %s\n", key, wl.Phase, why)
		if end == EndFailed {
			failed = append(failed, key)
		}
	}
	if len(workloads) == 0 && w.cfg.All {
		rolling = append(rolling, fmt.Sprintf("any workload of sync %s (none found)", w.cfg.SyncName))
	}
	w.rolling = rolling
	switch {
	case len(failed) > 0:
		return true, fmt.Errorf("%d workloads failed: %s", len(failed), strings.Join(failed, ", "))
	case len(rolling) == 0:
		return true, nil
	}
	if w.looks == 1 {
		fmt.Fprintf(w.cfg.Out, "waiting for %s\n", strings.Join(w.rolling, "; "))
	}
	return false, nil
}

// workloads lists the workloads waited for, as they are now: those of
// Deployments, and the StatefulSets and DaemonSets of the sync or of the
// names.
func (w *waiter) workloads(ctx context.Context) ([]Workload, error) {
	selector, setSelector := contract.LabelWorkload, contract.LabelSync
	if w.cfg.All {
		selector = contract.LabelSync + "=" + w.cfg.SyncName + "," + contract.LabelWorkload
		setSelector = contract.LabelSync + "=" + w.cfg.SyncName
	} else {
		selector = fmt.Sprintf("%s in (%s)", contract.LabelWorkload, strings.Join(w.cfg.Names, ","))
	}
	out, err := list(ctx, w.client, w.cfg.Namespace, selector)
	if err != nil {
		return nil, err
	}
	sets, err := listSets(ctx, w.client, w.cfg.Namespace, setSelector)
	if err != nil {
		return nil, err
	}
	if !w.cfg.All {
		sets = named(sets, w.cfg.Names)
	}
	return sorted(append(out, sets...)), nil
}

// syncOf reads the record of workload wl's sync (once a look) and what it
// says of the commit waited for.
func (w *waiter) syncOf(ctx context.Context, wl Workload) (*syncWatch, error) {
	key := wl.Namespace + "/" + wl.Sync
	if wl.Sync == "" {
		key = ""
	}
	sw, ok := w.syncs[key]
	if !ok {
		sw = &syncWatch{name: wl.Sync, commit: w.cfg.Commit}
		w.syncs[key] = sw
	}
	if sw.appliedAt > 0 && sw.commit != "" {
		return sw, nil
	}
	if wl.Sync == "" {
		// No record to read: the workload's own commit says it.
		if sw.commit == "" {
			return nil, fmt.Errorf("workload %s/%s belongs to no sync (no %s label): give the commit to wait for (--commit)", wl.Namespace, wl.Name, contract.LabelSync)
		}
		if revision.Names(wl.Commit, sw.commit) {
			sw.appliedAt = w.looks
		}
		return sw, nil
	}
	rec, err := w.record(ctx, sw, wl.Namespace)
	if err != nil {
		return nil, err
	}
	if sw.commit == "" {
		if rec.Commit == "" {
			return nil, fmt.Errorf("sync %s has applied no commit yet: give the commit to wait for (--commit)", sw.name)
		}
		sw.commit = rec.Commit
	}
	applied, failed, note := commitState(rec, sw.commit)
	if applied {
		sw.templates = rec.Templates
	}
	if !applied && revision.Names(wl.Commit, sw.commit) {
		applied = true // a later commit came first; this one's revision shows it was taken
	}
	if !applied && note == "" {
		if applied, err = w.appliedEarlier(ctx, sw); err != nil {
			return nil, err
		}
	}
	switch {
	case applied:
		sw.appliedAt = w.looks
	case failed != "":
		sw.failed = failed
	case note != "" && note != sw.said:
		sw.said = note
		fmt.Fprintf(w.cfg.Out, "sync %s: %s\n", sw.name, note)
	}
	return sw, nil
}

// record reads the record of sw's sync: in the status namespace when it
// is given, else in the workload's namespace ns, else in whichever
// namespace holds the only record of that name.
func (w *waiter) record(ctx context.Context, sw *syncWatch, ns string) (Sync, error) {
	if sw.namespace == "" {
		sw.namespace = w.cfg.StatusNamespace
	}
	if sw.namespace == "" {
		found, err := FindSyncs(ctx, w.client, ns, sw.name)
		if err == nil && len(found) == 0 {
			found, err = FindSyncs(ctx, w.client, metav1.NamespaceAll, sw.name)
		}
		switch {
		case err != nil:
			return Sync{}, fmt.Errorf("find the record of sync %s (give --status-namespace): %w", sw.name, err)
		case len(found) != 1:
			return Sync{}, fmt.Errorf("find the record of sync %s: %d found; give --status-namespace", sw.name, len(found))
		}
		sw.namespace = found[0].Namespace
		return found[0], nil
	}
	cm, err := w.client.CoreV1().ConfigMaps(sw.namespace).Get(ctx, contract.NamePrefix+sw.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Sync{}, nil // not synced yet
	}
	if err != nil {
		return Sync{}, fmt.Errorf("read the record of sync %s: %w", sw.name, err)
	}
	rec, _ := SyncOf(cm)
	return rec, nil
}

// appliedEarlier reports whether the sync of sw recorded an Event for
// applying its commit: a record that names a later commit may have
// applied this one before it.
func (w *waiter) appliedEarlier(ctx context.Context, sw *syncWatch) (bool, error) {
	list, err := w.client.CoreV1().Events(sw.namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "ConfigMap", "involvedObject.name": contract.NamePrefix + sw.name, "reason": psync.ReasonSynced}.String()})
	if apierrors.IsForbidden(err) {
		return false, nil // the record alone says it, a look later
	}
	if err != nil {
		return false, fmt.Errorf("read the Events of sync %s: %w", sw.name, err)
	}
	return slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
		return strings.HasPrefix(e.Message, "applied "+revision.Short(sw.commit)+" ")
	}), nil
}

// commitState says what a sync's record tells of commit: applied (the
// record's commit, applied in full); failed, the sync's message when the
// sync fetched commit and could not apply it; or a note while it is held
// or not fetched yet.
func commitState(rec Sync, commit string) (applied bool, failed, note string) {
	switch {
	case rec.Commit != "" && revision.Names(rec.Commit, commit):
		return true, "", ""
	case !revision.Names(rec.FetchedCommit, commit):
		return false, "", ""
	case rec.Status == contract.SyncFailed:
		return false, rec.Message, ""
	case rec.Status == contract.SyncHeld:
		return false, "", rec.Message
	}
	return false, "", fmt.Sprintf("commit %s fetched, not applied yet", revision.Short(commit))
}

// judge says whether workload wl has ended for a wait on commit, and how,
// with a line for the user. want is the template hash the commit gives
// wl, "" when its sync's record does not say. applied says that its sync
// applied commit; settled, that it had at the look before. Worked
// through for commit c2 that changes api's image (template h2), api at
// revision 1 of c1 (template h1) Healthy:
//
//   - before the sync applies c2: api goes on ("waiting for commit c2"),
//     whatever its phase: a Healthy revision 1 is not c2's;
//   - the record names c2, api's status still of h1: it goes on, however
//     long the controller takes to write revision 2 (without want, from
//     a record of an older daemon or of a later commit: for one look);
//   - api at revision 2 of h2, Paused at a canary step: it goes on;
//   - api at revision 2 of h2, Healthy: it ended Healthy;
//   - api Degraded (revision 2 failed, or h2 is the failed hash and was
//     refused): it ended Failed at once.
//
// A commit that leaves api's template as it was gives want h1: api's
// Healthy revision 1 of c1 ends the wait at once.
func judge(wl Workload, commit, want string, applied, settled bool) (End, string) {
	switch {
	case !applied:
		return "", fmt.Sprintf("waiting for commit %s to be applied; now %s", revision.Short(commit), wl.Phase)
	case wl.Phase == contract.PhaseDegraded:
		return EndFailed, wl.Message
	case wl.FailedHash != "" && wl.FailedHash == wl.TemplateHash:
		return EndFailed, fmt.Sprintf("the template of revision %d failed: %s", wl.Revision, wl.Message)
	case wl.FailedHash != "" && wl.FailedHash == want:
		return EndFailed, fmt.Sprintf("the template of commit %s (%s) failed before: not started again until Git changes it or a retry", revision.Short(commit), want)
	case want != "" && wl.TemplateHash != want:
		return "", fmt.Sprintf("commit %s applied; revision %d runs template %s, not its %s yet", revision.Short(commit), wl.Revision, wl.TemplateHash, want)
	case want == "" && !revision.Names(wl.Commit, commit) && !settled:
		return "", fmt.Sprintf("commit %s applied; revision %d is of commit %s", revision.Short(commit), wl.Revision, revision.Short(wl.Commit))
	case wl.Phase != contract.PhaseHealthy:
		return "", fmt.Sprintf("%s: %s", wl.Phase, wl.Message)
	case revision.Names(wl.Commit, commit):
		return EndHealthy, fmt.Sprintf("revision %d of commit %s: %s", wl.Revision, revision.Short(commit), wl.Message)
	case wl.Commit == "":
		// A StatefulSet or DaemonSet records no commit: its template is
		// the commit's (want), or the commit left it as it was.
		return EndHealthy, fmt.Sprintf("revision %d runs the template of commit %s: %s", wl.Revision, revision.Short(commit), wl.Message)
	}
	return EndHealthy, fmt.Sprintf("revision %d of commit %s, which commit %s left as it was: %s",
		wl.Revision, revision.Short(wl.Commit), revision.Short(commit), wl.Message)
}
