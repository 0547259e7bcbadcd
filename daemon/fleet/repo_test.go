package fleet

import (
	"context"
	"errors"
	"slices"
	gosync "sync"
	"testing"
	"time"

	psync "plimsoll.dev/plimsoll/sync"
)

// TestRepoHoldsItsSyncsWhilePolling: a sync never reads a Repo before its
// first poll, nor while a poll runs; it waits, and the poll's end hands it
// back, with every sync when the poll found something new. A sync of
// another Repo is not held.
func TestRepoHoldsItsSyncsWhilePolling(t *testing.T) {
	polling, release := make(chan struct{}), make(chan struct{})
	refused := errors.New("credentials Secret plimsoll/git does not exist")
	var once gosync.Once
	hung := newRepo(RepoKey{URL: "https://git.example/a.git"}, func(ctx context.Context, _ string) (psync.Source, string, error) {
		once.Do(func() { close(polling) })
		<-release
		return nil, "", refused
	})
	hung.state.users = map[string]time.Duration{"team-a": time.Minute, "team-b": 30 * time.Second}
	other := newRepo(RepoKey{URL: "https://git.example/b.git"}, func(context.Context, string) (psync.Source, string, error) {
		return nil, "", refused
	})

	if hung.tryRead("team-a") {
		t.Fatal("a sync read a Repo never polled")
	}
	done := make(chan bool)
	go func() { done <- hung.poll(context.Background()) }()
	<-polling
	if hung.tryRead("team-b") {
		t.Fatal("a sync read a Repo while it polls")
	}
	other.poll(context.Background())
	if !other.tryRead("team-c") {
		t.Fatal("a sync of another Repo was held by the poll of this one")
	}
	other.doneReading()
	close(release)
	if changed := <-done; !changed {
		t.Error("the first poll did not count as a change")
	}
	if got := hung.takeWaiting(false); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"team-a", "team-b"}) {
		t.Errorf("waiting syncs = %v, want team-a and team-b", got)
	}
	if _, err := hung.Source().Head(context.Background()); !errors.Is(err, refused) {
		t.Errorf("Head = %v, want the poll's failure", err)
	}
	if got := hung.interval(); got != 30*time.Second {
		t.Errorf("interval = %s, want the shortest of its syncs', 30s", got)
	}
	if hung.poll(context.Background()) {
		t.Error("a poll that found the same failure counted as a change")
	}
	if !hung.tryRead("team-a") {
		t.Error("a sync could not read a Repo polled and idle")
	}
	hung.doneReading()
}
