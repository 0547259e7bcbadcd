package rollout

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"plimsoll.dev/plimsoll/contract"
)

// intent is what Git asks of a workload, as the sync last handed it off:
// the Git Deployment and the commit it came from, or the reason the
// commit's Deployment was refused.
type intent struct {
	git             *appsv1.Deployment
	commit, subject string
	// refused is the input error that refused the workload's Deployment
	// in the latest commit; the workload then holds as it is, Degraded
	// with the error, until Git changes.
	refused error
	// refusedGit is the refused Git Deployment.
	refusedGit *appsv1.Deployment
}

// intents holds the intent of each workload, by key, in memory: a daemon
// that starts again is handed every Deployment by its first sync. Until
// then a workload goes on from the state recorded on its objects.
type intents struct {
	mu    sync.Mutex
	byKey map[string]intent
	// waiting are the handoffs waiting for a workload's next reconcile
	// (once mode).
	waiting map[string][]chan error
	// leaving are the workloads whose Deployment left Git and is being
	// removed (see Controller.removeWorkload): not reconciled, so that
	// nothing undoes the removal, until Git hands them off again.
	leaving map[string]bool
}

func newIntents() *intents {
	return &intents{byKey: map[string]intent{}, waiting: map[string][]chan error{}, leaving: map[string]bool{}}
}

// leave marks the workload of key as leaving Git.
func (i *intents) leave(key string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.leaving[key] = true
	delete(i.byKey, key)
}

// isLeaving reports whether the workload of key is leaving Git.
func (i *intents) isLeaving(key string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.leaving[key]
}

// get returns the intent of key.
func (i *intents) get(key string) (intent, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	in, ok := i.byKey[key]
	return in, ok
}

// keys returns the keys of the workloads that have an intent.
func (i *intents) keys() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	keys := make([]string, 0, len(i.byKey))
	for key := range i.byKey {
		keys = append(keys, key)
	}
	return keys
}

// record records git, of commit, as the intent of key, unless the intent
// holds the same Git Deployment already; a refusal recorded before is
// over. It reports whether the intent changed. An intent that another
// sync handed off (git carries another plimsoll.dev/sync label) is not
// overwritten: record names that sync as holder, and changes nothing.
// The check and the record are one, so that of two syncs that hand one
// workload off at the same moment, one holds it.
func (i *intents) record(key string, git *appsv1.Deployment, commit, subject string) (changed bool, holder string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	in, ok := i.byKey[key]
	if held := in.holder(); held != "" && held != git.Labels[contract.LabelSync] && git.Labels[contract.LabelSync] != "" {
		return false, held
	}
	delete(i.leaving, key)
	if ok && in.refused == nil && in.git != nil && equality.Semantic.DeepEqual(in.git, git) {
		return false, ""
	}
	i.byKey[key] = intent{git: git, commit: commit, subject: subject}
	return true, ""
}

// holder is the sync whose Git Deployment the intent holds (its
// plimsoll.dev/sync label), "" for none. A refusal alone holds nothing:
// the refusals of a refused commit (see commitHandoff.Refuse) are
// recorded before the commit's ownership is decided.
func (in intent) holder() string {
	if in.git == nil {
		return ""
	}
	return in.git.Labels[contract.LabelSync]
}

// disown forgets the intent of key if sync handed it off, and tells the
// handoffs waiting for it err: the workload is another sync's (see
// Controller.mayWrite).
func (i *intents) disown(key, sync string, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if in, ok := i.byKey[key]; !ok || in.syncName() != sync {
		return
	}
	delete(i.byKey, key)
	for _, ch := range i.waiting[key] {
		ch <- err
	}
	delete(i.waiting, key)
}

// keepOnly forgets the intents of every workload of sync syncName ("" for
// every sync) but keys: their Deployments left Git.
func (i *intents) keepOnly(keys []string, syncName string) {
	keep := make(map[string]bool, len(keys))
	for _, key := range keys {
		keep[key] = true
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for key, in := range i.byKey {
		if !keep[key] && (syncName == "" || in.syncName() == syncName) {
			delete(i.byKey, key)
		}
	}
}

// refuse records that Git's Deployment of key is refused for err; what was
// handed off before stays the intent underneath. It reports whether the
// refusal is new.
func (i *intents) refuse(key string, git *appsv1.Deployment, err error) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	in := i.byKey[key]
	same := in.refused != nil && in.refused.Error() == err.Error()
	in.refused, in.refusedGit = err, git
	i.byKey[key] = in
	return !same
}

// wait returns a channel that receives the outcome of key's next
// reconcile.
func (i *intents) wait(key string) <-chan error {
	ch := make(chan error, 1)
	i.mu.Lock()
	defer i.mu.Unlock()
	i.waiting[key] = append(i.waiting[key], ch)
	return ch
}

// reconciled tells the handoffs waiting for key how its reconcile went. A
// conflict is not an outcome: the reconcile runs again on fresh state.
func (i *intents) reconciled(key string, err error) {
	if apierrors.IsConflict(err) {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, ch := range i.waiting[key] {
		ch <- err
	}
	delete(i.waiting, key)
}
