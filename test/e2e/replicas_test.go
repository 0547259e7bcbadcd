//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// Shape of the replicas test.
const (
	replicaCount = 3
	syncCount    = 30
	// canarySync is the sync whose workload rolls out a canary while its
	// replica is killed.
	canarySync = "s00"
	// leaseDuration is the daemon's: a dead replica's syncs move once its
	// Lease stood still that long.
	leaseDuration = 15 * time.Second
)

// write is one write a replica made, as its API proxy saw the answer: the
// object's path, its resourceVersion after the write (the API server's
// order of every write), and, for a Lease, its holder after it.
type write struct {
	replica int
	method  string
	path    string
	version int64
	holder  string
	// query and as are the request's query and the identity it
	// impersonated, for a failure's message.
	query, as string
}

// writeLog collects the writes of every replica.
type writeLog struct {
	mu     gosync.Mutex
	writes []write
}

// observe records the write resp answers, if it is one that succeeded
// and names an object with a resourceVersion.
func (l *writeLog) observe(t *testing.T, replica int, resp *http.Response) {
	r := resp.Request
	if r.Method == http.MethodGet || resp.StatusCode >= 300 || r.URL.Query().Has("dryRun") {
		return // no write, or one that changed nothing
	}
	body, err := kit.PeekBody(resp)
	if err != nil {
		return
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetResourceVersion() == "" {
		return
	}
	version, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Errorf("resourceVersion %q of %s is no number", m.GetResourceVersion(), r.URL.Path)
		return
	}
	path := r.URL.Path
	if r.Method == http.MethodPost {
		path += "/" + m.GetName() // a create names the collection
	}
	w := write{replica: replica, method: r.Method, path: path, version: version, query: r.URL.RawQuery, as: r.Header.Get("Impersonate-User")}
	if lease, ok := obj.(*coordinationv1.Lease); ok && lease.Spec.HolderIdentity != nil {
		w.holder = *lease.Spec.HolderIdentity
	}
	l.mu.Lock()
	l.writes = append(l.writes, w)
	l.mu.Unlock()
}

// replicaSet is the replicas of a platform, each behind its own proxy.
type replicaSet struct {
	p       *platform
	daemons []*kit.Daemon
	// ids are the replicas' identities in the Leases ("<host>_<pid>").
	ids []string
	log *writeLog
}

// startReplicas starts n replicas of the platform's daemon, each talking
// to the API server through a proxy that records its writes.
func startReplicas(t *testing.T, p *platform, n int) *replicaSet {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	rs := &replicaSet{p: p, log: &writeLog{}}
	for i := range n {
		proxy := kit.StartAPIProxy(t, cfg, func(resp *http.Response) { rs.log.observe(t, i, resp) })
		t.Cleanup(proxy.Close)
		kubeconfig := t.TempDir() + "/kubeconfig"
		proxy.WriteKubeconfig(t, kubeconfig)
		d := kit.StartDaemon(t, replicaTarget{p: p, kubeconfig: kubeconfig})
		rs.daemons = append(rs.daemons, d)
		rs.ids = append(rs.ids, fmt.Sprintf("%s_%d", strings.ReplaceAll(host, "_", "-"), d.Cmd.Process.Pid))
	}
	return rs
}

// replicaTarget runs the platform's daemon through a proxy's kubeconfig.
type replicaTarget struct {
	p          *platform
	kubeconfig string
}

func (r replicaTarget) RunFlags(extra ...string) (string, []string) {
	return r.p.RunFlags(append([]string{"--kubeconfig", r.kubeconfig}, extra...)...)
}

// holders reads the holder of every sync's Lease.
func (rs *replicaSet) holders(t *testing.T, syncs []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range syncs {
		l, err := suite.client.CoordinationV1().Leases(rs.p.home).Get(context.Background(), "plimsoll-"+s, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			out[s] = *l.Spec.HolderIdentity
		}
	}
	return out
}

// syncOfPath names the sync whose object path is, or "" for none of the
// test's; lease says the path is the sync's Lease.
func (rs *replicaSet) syncOfPath(path string, teams []string) (name string, lease bool) {
	home, leases := "/api/v1/namespaces/"+rs.p.home+"/", "/apis/coordination.k8s.io/v1/namespaces/"+rs.p.home+"/leases/plimsoll-"
	switch {
	case strings.HasPrefix(path, leases+"s"):
		return strings.TrimPrefix(path, leases), true
	case strings.HasPrefix(path, home+"configmaps/plimsoll-sync-s"):
		return strings.TrimPrefix(path, home+"configmaps/plimsoll-sync-"), false
	}
	for _, ns := range teams {
		if rest, ok := strings.CutPrefix(path, "/api/v1/namespaces/"+ns+"/configmaps/cfg-"); ok {
			return rest, false
		}
	}
	canaryNS := "/namespaces/" + teams[0] + "/"
	for _, kind := range []string{"deployments/", "pods/", "services/", "replicasets/"} {
		if strings.Contains(path, canaryNS+kind) {
			return rs.p.sync(canarySync), false
		}
	}
	return "", false
}

// checkOneWriterAtATime checks, in the API server's order of writes,
// that every write of a sync's objects was made by the replica that held
// the sync's Lease then, and, but for its record, as the ServiceAccount of
// its namespace: the sync's applies and its workloads' rollout alike. A write that changed nothing answers with the
// object's resourceVersion as it was: only the first write seen with a
// path's resourceVersion made it.
func (rs *replicaSet) checkOneWriterAtATime(t *testing.T, teams []string) {
	t.Helper()
	rs.log.mu.Lock()
	seen := map[string]bool{}
	var writes []write
	for _, w := range rs.log.writes {
		key := fmt.Sprintf("%s@%d", w.path, w.version)
		if !seen[key] {
			seen[key] = true
			writes = append(writes, w)
		}
	}
	rs.log.mu.Unlock()
	slices.SortFunc(writes, func(a, b write) int { return int(a.version - b.version) })
	holder := map[string]string{}
	checked := 0
	for _, w := range writes {
		name, lease := rs.syncOfPath(w.path, teams)
		switch {
		case name == "":
		case lease:
			holder[name] = w.holder
		case !rs.asItsNamespace(w):
			t.Errorf("replica %d wrote %s %s as %q, not as the ServiceAccount of the sync's namespace", w.replica, w.method, w.path, w.as)
		case holder[name] != rs.ids[w.replica]:
			t.Errorf("replica %d (%s) wrote %s %s at resourceVersion %d while the Lease of sync %s was held by %q; the sync's writes:\n%s",
				w.replica, rs.ids[w.replica], w.method, w.path, w.version, name, holder[name], rs.history(writes, name, teams))
		default:
			checked++
		}
	}
	t.Logf("%d writes of the syncs' objects, each by the replica holding the sync then", checked)
	if checked == 0 {
		t.Error("no write of a sync's object was seen: the check proved nothing")
	}
}

// asItsNamespace reports whether w, unless it is of the platform's own
// namespace (a record, a Lease) or a Deployment's status (the daemon's
// own write, docs/syncs.md), impersonated a ServiceAccount of the
// namespace it wrote in.
func (rs *replicaSet) asItsNamespace(w write) bool {
	if strings.Contains(w.path, "/namespaces/"+rs.p.home+"/") {
		return true
	}
	if strings.Contains(w.path, "/deployments/") && strings.HasSuffix(w.path, "/status") {
		return w.as == ""
	}
	parts := strings.Split(w.as, ":")
	return len(parts) == 4 && parts[0] == "system" && parts[1] == "serviceaccount" &&
		strings.Contains(w.path, "/namespaces/"+parts[2]+"/")
}

// history lists the writes of sync name, for a failure.
func (rs *replicaSet) history(writes []write, name string, teams []string) string {
	var lines []string
	for _, w := range writes {
		if s, _ := rs.syncOfPath(w.path, teams); s == name {
			lines = append(lines, fmt.Sprintf("%d replica %d %s %s?%s as %q, holder %q", w.version, w.replica, w.method, w.path, w.query, w.as, w.holder))
		}
	}
	return strings.Join(lines, "\n")
}

// TestReplicasShareThirtySyncs: three replicas and 30 syncs, each owned by
// exactly one replica; SIGKILL of one replica moves its syncs to the
// others once its Lease ran out, and an in-flight canary on a moved sync
// completes with the Service's ready endpoints never below its 4; in the
// API server's order of writes, no sync's object is ever written by a
// replica that does not hold the sync's Lease.
func TestReplicasShareThirtySyncs(t *testing.T) {
	parallel(t)
	p := newPlatform(t)
	teams := []string{p.team(t, "r0"), p.team(t, "r1"), p.team(t, "r2")}
	apps := testgit.New(t)
	files := map[string]string{}
	declarations := map[string]string{}
	var syncs []string
	for i := range syncCount {
		name := fmt.Sprintf("s%02d", i)
		syncs = append(syncs, p.sync(name))
		ns := teams[i%len(teams)]
		files[name+"/config.yaml"] = configMapDoc(ns, "cfg-"+p.sync(name), "one")
		declarations[name+".yaml"] = p.declaration(name, fmt.Sprintf("repository: %s\npath: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n",
			apps.URL(), name, ns, ns))
	}
	for file, text := range canaryExample(t, "v1") {
		files[canarySync+"/"+file] = text
	}
	first := apps.Commit("thirty syncs", files)
	p.root.Commit("thirty syncs", declarations)
	rs := startReplicas(t, p, replicaCount)
	for i := range syncs {
		p.waitForSynced(t, fmt.Sprintf("s%02d", i), first)
	}

	holders := rs.holders(t, syncs)
	perReplica := map[string]int{}
	for _, s := range syncs {
		if !slices.Contains(rs.ids, holders[s]) {
			t.Fatalf("sync %s is held by %q, none of the replicas %v", s, holders[s], rs.ids)
		}
		perReplica[holders[s]]++
	}
	t.Logf("syncs per replica: %v", perReplica)
	for _, id := range rs.ids {
		if perReplica[id] == 0 || perReplica[id] > 13 {
			t.Errorf("replica %s holds %d syncs, want 1 to 13 (the bound of 30 on 3)", id, perReplica[id])
		}
	}

	canaryNS := teams[0]
	waitForDeployment(t, canaryNS, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, canaryNS, "api")
	endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()
	files = map[string]string{}
	for file, text := range canaryExample(t, "v2") {
		files[canarySync+"/"+file] = text
	}
	apps.Commit("api v2", files)
	waitForDeployment(t, canaryNS, "api", "step 2/5 waiting for promote", phaseIs(2, "Paused", "canary step 2/5"))

	victim := slices.Index(rs.ids, holders[p.sync(canarySync)])
	moved := []string{}
	for _, s := range syncs {
		if holders[s] == rs.ids[victim] {
			moved = append(moved, s)
		}
	}
	killed := time.Now()
	if err := rs.daemons[victim].Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-rs.daemons[victim].Exited()
	live := slices.Delete(slices.Clone(rs.ids), victim, victim+1)
	waitFor(t, "the killed replica's syncs to move", func(context.Context) (bool, error) {
		now := rs.holders(t, moved)
		for _, s := range moved {
			if !slices.Contains(live, now[s]) {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("the %d syncs of the killed replica moved %s after the kill (Lease duration %s)", len(moved),
		time.Since(killed).Round(100*time.Millisecond), leaseDuration)

	command(t, canaryNS, "api", "promote")
	waitForDeployment(t, canaryNS, "api", "step 4/5 waiting for promote", phaseIs(2, "Paused", "canary step 4/5"))
	command(t, canaryNS, "api", "promote")
	waitForDeployment(t, canaryNS, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	endpoints.waitReady(t, "4 endpoints, none of the canary", func(pods []string) bool {
		return len(pods) == 4 && len(withPrefix(pods, "api-canary-")) == 0
	})
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the Service had %d ready endpoints during the rollout (%v), want never fewer than 4; history:\n%s",
			n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
	last := slices.Index(syncs, moved[len(moved)-1])
	next := apps.Commit("after the move", map[string]string{fmt.Sprintf("s%02d/config.yaml", last): configMapDoc(
		teams[last%len(teams)], "cfg-"+syncs[last], "two")})
	p.waitForSynced(t, fmt.Sprintf("s%02d", last), next)
	rs.checkOneWriterAtATime(t, teams)
	t.Logf("holders after the move: %v", rs.holders(t, syncs))
}
