//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// configuredWeb is a kustomization whose configMapGenerator makes
// ConfigMap web-config-<hash> from GREETING=greeting, and the rolling
// tests' Deployment web (2 replicas, image) reading it through envFrom and
// a volume; kustomize writes the hashed name into both. minReady and
// deadline are its minReadySeconds and progressDeadlineSeconds.
func configuredWeb(t *testing.T, image, greeting string, minReady, deadline int) map[string]string {
	t.Helper()
	web := rollingDeployment(2, image)
	const deadline10 = "  progressDeadlineSeconds: 10\n"
	if !strings.Contains(web, deadline10) || !strings.HasSuffix(web, "image: "+image+"\n") {
		t.Fatalf("rollingDeployment no longer ends with its container's image after %q:\n%s", deadline10, web)
	}
	web = strings.Replace(web, deadline10, fmt.Sprintf("  minReadySeconds: %d\n  progressDeadlineSeconds: %d\n", minReady, deadline), 1)
	web += `        envFrom:
        - configMapRef: {name: web-config}
        volumeMounts:
        - {name: config, mountPath: /etc/web}
      volumes:
      - name: config
        configMap: {name: web-config}
`
	return map[string]string{
		"kustomization.yaml": fmt.Sprintf(`resources:
- web.yaml
configMapGenerator:
- name: web-config
  literals:
  - GREETING=%s
`, greeting),
		"web.yaml": web,
	}
}

// configOf returns the ConfigMap d's template reads, failing the test
// unless envFrom and the volume name the same generated one.
func configOf(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	spec := d.Spec.Template.Spec
	env, volume := spec.Containers[0].EnvFrom[0].ConfigMapRef.Name, spec.Volumes[0].ConfigMap.Name
	if env != volume || !strings.HasPrefix(env, "web-config-") {
		t.Fatalf("Deployment %s reads ConfigMap %q by envFrom and %q by volume, want one web-config-<hash>", d.Name, env, volume)
	}
	return env
}

// configExists reports whether ConfigMap name is in ns.
func configExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("read ConfigMap %s: %v", name, err)
	}
	return err == nil
}

// configChange is one change a configWatch saw.
type configChange struct {
	at time.Time
	// kind is "phase" (value "<revision>:<phase>" of Deployment web),
	// "deleted" (value a ConfigMap's name) or "message" (the sync's
	// status message).
	kind, value string
}

// configWatch follows, with informers, the workload web's revision and
// phase, the deletions of ConfigMaps and the sync's status message in one
// namespace, and records each change in the order it arrives, from the
// moment it starts until the test ends.
type configWatch struct {
	mu      gosync.Mutex
	changes []configChange
}

// watchConfig starts a configWatch on the namespace and sync of s and
// returns once both informers have listed.
func watchConfig(t *testing.T, s *syncTarget) *configWatch {
	t.Helper()
	w := &configWatch{}
	record := s.statusRecordName()
	message := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == record {
			w.add("message", cm.Annotations["plimsoll.dev/message"])
		}
	}
	kit.RunInformer(t.Context(), t, coreinformers.NewConfigMapInformer(suite.client, s.ns, 0, cache.Indexers{}), cache.ResourceEventHandlerFuncs{
		AddFunc:    message,
		UpdateFunc: func(_, obj any) { message(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				w.add("deleted", cm.Name)
			}
		},
	}, "ConfigMaps of "+s.ns)
	phase := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok && d.Name == "web" {
			w.add("phase", d.Annotations["plimsoll.dev/revision"]+":"+d.Annotations["plimsoll.dev/phase"])
		}
	}
	kit.RunInformer(t.Context(), t, appsinformers.NewDeploymentInformer(suite.client, s.ns, 0, cache.Indexers{}),
		kit.OnAddOrUpdate(phase), "Deployments of "+s.ns)
	return w
}

// statusRecordName is the name of the sync's status ConfigMap.
func (s *syncTarget) statusRecordName() string { return "plimsoll-sync-" + s.ns }

// add records a change unless it repeats the last one of its kind.
func (w *configWatch) add(kind, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.changes) - 1; i >= 0; i-- {
		if w.changes[i].kind == kind {
			if w.changes[i].value == value && kind != "deleted" {
				return
			}
			break
		}
	}
	w.changes = append(w.changes, configChange{at: time.Now(), kind: kind, value: value})
}

// deletion returns when ConfigMap name was seen deleted and the phase of
// web then, ok false when it was not seen deleted.
func (w *configWatch) deletion(name string) (at time.Time, phase string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.changes {
		switch {
		case c.kind == "phase":
			phase = c.value
		case c.kind == "deleted" && c.value == name:
			return c.at, phase, true
		}
	}
	return time.Time{}, phase, false
}

// reached returns when web first had the phase given ("2:Healthy").
func (w *configWatch) reached(phase string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.changes {
		if c.kind == "phase" && c.value == phase {
			return c.at, true
		}
	}
	return time.Time{}, false
}

// messages returns the sync's status messages seen, in order.
func (w *configWatch) messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.changes {
		if c.kind == "message" {
			out = append(out, c.value)
		}
	}
	return out
}

// waitsFor reports whether msg says that a prune of ConfigMap ns/name waits
// for Deployment web at the revision and phase given, with each of how.
func waitsFor(msg, ns, name, revisionPhase string, how ...string) bool {
	start := strings.Index(msg, fmt.Sprintf("prune waits: ConfigMap %s/%s (referenced by Deployment web, revision %s; ", ns, name, revisionPhase))
	if start < 0 {
		return false
	}
	clause, _, _ := strings.Cut(msg[start:], ")")
	for _, h := range how {
		if !strings.Contains(clause, h) {
			return false
		}
	}
	return true
}

// configRollout is a workload web that read generated ConfigMap old at
// revision 1 and reads current at revision 2, from commit second, synced
// by a daemon polling every second and watched from revision 1 on.
type configRollout struct {
	s            *syncTarget
	watch        *configWatch
	old, current string
	second       string
}

// startConfigRollout syncs configuredWeb greeting "hello" on image v1 as
// revision 1, then commits greeting "bonjour" on image as revision 2, and
// returns once revision 2 is Progressing, checking that it reads a new
// ConfigMap and that revision 1's is still there. minReady and deadline
// are the Deployment's, in both commits.
func startConfigRollout(t *testing.T, image string, minReady, deadline int) *configRollout {
	t.Helper()
	r := &configRollout{s: newSyncTarget(t)}
	first := r.s.repo.Commit("web v1", configuredWeb(t, "registry.example/web:v1", "hello", minReady, deadline))
	kit.StartDaemon(t, r.s, "--interval", "1s")
	r.s.waitForCommit(t, first)
	r.old = configOf(t, waitForRevision(t, r.s.ns, 1, "Healthy"))
	r.watch = watchConfig(t, r.s)

	t.Logf("commit 2: a new greeting (a new generated ConfigMap) on image %s", image)
	r.second = r.s.repo.Commit("web v2: greet in French", configuredWeb(t, image, "bonjour", minReady, deadline))
	r.s.waitForCommit(t, r.second)
	r.current = configOf(t, waitForRevision(t, r.s.ns, 2, "Progressing"))
	if r.current == r.old {
		t.Fatalf("revision 2 reads ConfigMap %s, as revision 1 did; want a new generated name", r.old)
	}
	if !configExists(t, r.s.ns, r.old) {
		t.Fatalf("ConfigMap %s, which revision 1 reads, was pruned while revision 2 rolls out", r.old)
	}
	return r
}

// said reports whether a sync status message the watch saw says that the
// prune of the old ConfigMap waits for revision 2 in phase, with each of
// how; it fails the test, listing the messages, when none does.
func (r *configRollout) said(t *testing.T, phase string, how ...string) {
	t.Helper()
	msgs := r.watch.messages()
	if !slices.ContainsFunc(msgs, func(m string) bool { return waitsFor(m, r.s.ns, r.old, "2 "+phase, how...) }) {
		t.Errorf("no sync status message said the prune of %s waits for revision 2 %s (%s); messages:\n%s",
			r.old, phase, strings.Join(how, ", "), strings.Join(msgs, "\n"))
	}
}

// TestConfigKeptForRollback changes a configMapGenerator literal and breaks
// the image in one commit: the rollout fails and rolls back, and the old
// generated ConfigMap, which left Git, is there all along, so that the
// restored template reads a ConfigMap that exists. The sync is Synced and
// its status says the prune waits, and for what.
func TestConfigKeptForRollback(t *testing.T) {
	parallel(t)
	r := startConfigRollout(t, "registry.example/web:does-not-exist", 0, 10)
	s, old := r.s, r.old

	rolledBack := waitForDeployment(t, s.ns, "web", "revision 2 failed and rolled back", func(d *appsv1.Deployment) bool {
		return phaseIs(2, "Degraded")(d) && d.Annotations["plimsoll.dev/failed-hash"] != ""
	})
	if got := configOf(t, rolledBack); got != old {
		t.Fatalf("the rolled-back template reads ConfigMap %s, want revision 1's %s", got, old)
	}
	if !configExists(t, s.ns, old) {
		t.Fatalf("the rolled-back template reads ConfigMap %s, which is gone", old)
	}
	waitFor(t, "the sync status to say the prune waits for the restored template", func(ctx context.Context) (bool, error) {
		return waitsFor(s.status(t)["plimsoll.dev/message"], s.ns, old, "2 Degraded", "template"), nil
	})
	holdsFor(t, "the restored template's ConfigMap staying, the sync Synced at commit 2", 5*time.Second, func(ctx context.Context) error {
		st := s.status(t)
		switch {
		case !configExists(t, s.ns, old):
			return fmt.Errorf("ConfigMap %s was pruned while the live template reads it", old)
		case st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != r.second:
			return fmt.Errorf("sync %s at commit %s, want Synced at %s", st["plimsoll.dev/sync-status"], st["plimsoll.dev/commit"], r.second[:7])
		}
		return nil
	})

	if _, phase, deleted := r.watch.deletion(old); deleted {
		t.Errorf("ConfigMap %s was deleted (web at %s)", old, phase)
	}
	r.said(t, "Progressing", "rollback target")
	table, code := runPlimsoll(t, append([]string{"status", "--sync-name", s.ns}, s.cliFlags()...)...)
	if code != 0 || !strings.Contains(table, fmt.Sprintf("1 prune waits: ConfigMap %s/%s", s.ns, old)) {
		t.Errorf("plimsoll status exited %d without the waiting prune:\n%s", code, table)
	}
}

// TestConfigKeptUntilHealthy changes a configMapGenerator literal in a good
// commit: the old generated ConfigMap stays while the new revision rolls
// out and is pruned once it is Healthy.
func TestConfigKeptUntilHealthy(t *testing.T) {
	parallel(t)
	// Pods are available 5 s after they are Ready, so the rollout of 2
	// pods, one at a time (maxSurge 1, maxUnavailable 0), is Progressing
	// for 10 s or more: polls see it.
	r := startConfigRollout(t, "registry.example/web:v1", 5, 120)
	s, old := r.s, r.old

	waitForRevision(t, s.ns, 2, "Healthy")
	waitFor(t, "ConfigMap "+old+" to be pruned", func(ctx context.Context) (bool, error) {
		return !configExists(t, s.ns, old), nil
	})
	// The watch hears of the deletion a moment after a read finds the
	// ConfigMap gone.
	waitFor(t, "the watch to see ConfigMap "+old+" deleted", func(ctx context.Context) (bool, error) {
		_, _, deleted := r.watch.deletion(old)
		return deleted, nil
	})
	at, phase, _ := r.watch.deletion(old)
	healthy, _ := r.watch.reached("2:Healthy")
	switch {
	case phase != "2:Healthy":
		t.Errorf("ConfigMap %s was deleted while web was at %s, want 2:Healthy", old, phase)
	default:
		t.Logf("ConfigMap %s pruned %s after revision 2 was Healthy", old, at.Sub(healthy).Round(time.Millisecond))
	}
	if !configExists(t, s.ns, r.current) {
		t.Errorf("ConfigMap %s, which revision 2 reads, is gone", r.current)
	}
	r.said(t, "Progressing", "old pods", "rollback target")
	waitFor(t, "the sync status to say no prune waits", func(ctx context.Context) (bool, error) {
		st := s.status(t)
		return st["plimsoll.dev/sync-status"] == "Synced" && !strings.Contains(st["plimsoll.dev/message"], "prune"), nil
	})
	if msgs := eventMessages(s.events(t), "Synced"); !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, ", 1 pruned") }) {
		t.Errorf("Synced events %q, want one counting the prune", msgs)
	}
}
