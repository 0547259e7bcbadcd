package workload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/inventory"
)

// The commits of the wait tests: c1 ran before, c2 is waited for.
const (
	c1 = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	c2 = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestJudge follows a workload through a wait on c2, as the comment of
// judge works it through.
func TestJudge(t *testing.T) {
	healthy1 := Workload{Phase: contract.PhaseHealthy, Revision: 1, Commit: c1, TemplateHash: "h1", Message: "4/4 available"}
	paused2 := Workload{Phase: contract.PhasePaused, Revision: 2, Commit: c2, TemplateHash: "h2", Message: "canary step 2/5"}
	healthy2 := Workload{Phase: contract.PhaseHealthy, Revision: 2, Commit: c2, TemplateHash: "h2", Message: "4/4 available"}
	degraded2 := Workload{Phase: contract.PhaseDegraded, Revision: 2, Commit: c2, TemplateHash: "h2", FailedHash: "h2",
		Message: "revision 2 failed: progress deadline exceeded"}
	refused := Workload{Phase: contract.PhaseHealthy, Revision: 1, Commit: c1, TemplateHash: "h2", FailedHash: "h2"}
	tests := []struct {
		name             string
		w                Workload
		commit, hash     string // hash: the record's template hash for the workload, "" for none
		applied, settled bool
		want             End
		why              string
	}{
		{"c2 not applied: the previous revision's Healthy is not the end", healthy1, c2, "", false, false, "", "waiting for commit 2222222 to be applied; now Healthy"},
		{"c2 not applied: a Degraded revision may be fixed by it", degraded2, c2, "", false, false, "", "waiting for commit 2222222"},
		{"c2 just applied, revision 1 still recorded: one more look", healthy1, c2, "", true, false, "", "revision 1 is of commit 1111111"},
		{"c2 applied a look ago, revision 1 still: c2 left it as it was", healthy1, c2, "", true, true, EndHealthy, "which commit 2222222 left as it was"},
		{"c2 applied looks ago, its template h2 not taken yet", healthy1, c2, "h2", true, true, "", "revision 1 runs template h1, not its h2 yet"},
		{"c2 just applied, its template the one running", healthy1, c2, "h1", true, false, EndHealthy, "which commit 2222222 left as it was"},
		{"revision 2 of c2 paused at a step", paused2, c2, "h2", true, true, "", "Paused: canary step 2/5"},
		{"revision 2 of c2 Healthy", healthy2, c2, "h2", true, false, EndHealthy, "revision 2 of commit 2222222: 4/4 available"},
		{"revision 2 of c2 Healthy, no hash recorded", healthy2, c2, "", true, false, EndHealthy, "revision 2 of commit 2222222: 4/4 available"},
		{"a prefix of the commit will do", healthy2, "2222222bb", "h2", true, false, EndHealthy, "revision 2 of commit 2222222"},
		{"revision 2 Degraded", degraded2, c2, "h2", true, false, EndFailed, "progress deadline exceeded"},
		{"the template is the failed hash", refused, c2, "", true, false, EndFailed, "the template of revision 1 failed"},
		{"c2's template failed before, not started", Workload{Phase: contract.PhaseHealthy, Revision: 1, Commit: c1, TemplateHash: "h1", FailedHash: "h2"},
			c2, "h2", true, true, EndFailed, "the template of commit 2222222 (h2) failed before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end, why := judge(tt.w, tt.commit, tt.hash, tt.applied, tt.settled)
			if end != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("judge = %q, %q; want %q, %q", end, why, tt.want, tt.why)
			}
		})
	}
}

// TestWaitForTheCommitsTemplate waits on c2 once its sync's record says
// c2 is applied with template h2 for web, the controller not having
// written revision 2 yet: however many looks pass, web's Healthy revision
// 1 (template h1) does not end the wait; once web runs h2, it does.
func TestWaitForTheCommitsTemplate(t *testing.T) {
	record := statusConfigMap("ns", "plimsoll-sync-platform", "platform", contract.SyncSynced)
	record.Annotations[contract.AnnotationCommit] = c2
	record.Data[inventory.DataTemplates] = "ns web h2\n"
	web := dep("web", "primary", "1", contract.PhaseHealthy, "")
	web.Labels[contract.LabelSync] = "platform"
	web.Annotations[contract.AnnotationCommit] = c1
	web.Annotations[contract.AnnotationTemplateHash] = "h1"
	client := fake.NewClientset(record, web)
	cfg := WaitConfig{Namespace: "ns", Names: []string{"web"}, Commit: c2, Timeout: 2500 * time.Millisecond}

	var out strings.Builder
	cfg.Out = &out
	err := Wait(context.Background(), client, cfg)
	if !errors.Is(err, ErrWaitTimeout) || !strings.Contains(err.Error(), "revision 1 runs template h1, not its h2 yet") {
		t.Fatalf("Wait on a template not taken yet = %v (output %q); want a timeout naming both templates", err, out.String())
	}

	web.Annotations[contract.AnnotationCommit] = c2
	web.Annotations[contract.AnnotationTemplateHash] = "h2"
	web.Annotations[contract.AnnotationRevision] = "2"
	if _, err := client.AppsV1().Deployments("ns").Update(context.Background(), web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Wait(context.Background(), client, cfg); err != nil || !strings.Contains(out.String(), "ns/web Healthy: revision 2 of commit 2222222") {
		t.Errorf("Wait once web runs h2 = %v, output %q; want it to end Healthy", err, out.String())
	}
}

// TestCommitState reads what a sync's record says of the commit waited
// for.
func TestCommitState(t *testing.T) {
	tests := []struct {
		name         string
		rec          Sync
		applied      bool
		failed, note string
	}{
		{"applied", Sync{Status: contract.SyncSynced, Commit: c2, FetchedCommit: c2}, true, "", ""},
		{"applied, a later sync of it failed", Sync{Status: contract.SyncFailed, Commit: c2, FetchedCommit: c2, Message: "apply: conflict"}, true, "", ""},
		{"not fetched yet", Sync{Status: contract.SyncSynced, Commit: c1, FetchedCommit: c1}, false, "", ""},
		{"refused", Sync{Status: contract.SyncFailed, Commit: c1, FetchedCommit: c2, Message: "commit 2222222 not applied: bad.yaml"}, false, "commit 2222222 not applied: bad.yaml", ""},
		{"held by a window", Sync{Status: contract.SyncHeld, Commit: c1, FetchedCommit: c2, Message: "commit 2222222 held until 18:00"}, false, "", "commit 2222222 held until 18:00"},
		{"fetched, being applied", Sync{Status: contract.SyncSynced, Commit: c1, FetchedCommit: c2}, false, "", "commit 2222222 fetched, not applied yet"},
		{"no record yet", Sync{}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, failed, note := commitState(tt.rec, c2)
			if applied != tt.applied || failed != tt.failed || note != tt.note {
				t.Errorf("commitState = %v, %q, %q; want %v, %q, %q", applied, failed, note, tt.applied, tt.failed, tt.note)
			}
		})
	}
}

// TestWaitConfigValidate refuses what a wait cannot act on, naming the
// flag.
func TestWaitConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  WaitConfig
		want string // "" when valid
	}{
		{"one workload", WaitConfig{Names: []string{"api"}, Timeout: 1}, ""},
		{"a sync", WaitConfig{All: true, SyncName: "platform", Commit: "2222222", Timeout: 1}, ""},
		{"nothing named", WaitConfig{Timeout: 1}, "name the workloads"},
		{"both", WaitConfig{Names: []string{"api"}, All: true, SyncName: "p", Timeout: 1}, "name no workload"},
		{"a sync without its name", WaitConfig{All: true, Timeout: 1}, "--sync-name"},
		{"a short commit", WaitConfig{Names: []string{"api"}, Commit: "22222", Timeout: 1}, `--commit "22222"`},
		{"a branch", WaitConfig{Names: []string{"api"}, Commit: "main", Timeout: 1}, `--commit "main"`},
		{"an artifact's short digest", WaitConfig{Names: []string{"api"}, Commit: "sha256:3f1c2a9", Timeout: 1}, ""},
		{"a digest of another algorithm", WaitConfig{Names: []string{"api"}, Commit: "md5:3f1c2a9", Timeout: 1}, `--commit "md5:3f1c2a9"`},
		{"no time", WaitConfig{Names: []string{"api"}}, "--timeout 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSameCommit: a commit matches its prefixes of 7 digits or more, a
// digest its prefixes of the algorithm and 7 digits or more: "sha256:"
// alone names every artifact, and is not one.
func TestSameCommit(t *testing.T) {
	const commit = "1a2b3c4d5e6f708192a3b4c5d6e7f80912a3b4c5"
	const digest = "sha256:3f1c2a9b0e7d45d41e0712a3b4c5d6e7f80912a3b4c51a2b3c4d5e6f708192"
	for _, c := range []struct {
		full, given string
		want        bool
	}{
		{commit, commit, true}, {commit, "1a2b3c4", true}, {commit, "1a2b3c", false}, {commit, "1a2b3c5", false},
		{digest, digest, true}, {digest, "sha256:3f1c2a9", true}, {digest, "sha256:3f1c2a", false}, {digest, "sha256:", false},
		{digest, "3f1c2a9", false},
	} {
		if got := revision.Names(c.full, c.given); got != c.want {
			t.Errorf("revision.Names(%s, %s) = %v, want %v", revision.Short(c.full), c.given, got, c.want)
		}
	}
}
