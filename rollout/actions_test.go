package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// actionLog is the controller's log in the tests: a slog.Handler that
// keeps, of every record, only the "execute action" ones, which
// (*Controller).execute logs before running each action, as (workload,
// action) in the order they came; the rest is dropped. It is safe for concurrent use: the
// handlers WithAttrs returns share its records.
type actionLog struct {
	records *actionRecords
	// attrs are those given by WithAttrs, read before the record's own.
	attrs []slog.Attr
}

// actionRecords are the actions an actionLog kept and not yet taken.
type actionRecords struct {
	mu   sync.Mutex
	kept []executed
}

// executed is one action the controller ran: the workload's key and the
// action's line (see strategies.Action.String).
type executed struct {
	workload, action string
}

// newActionLog returns an actionLog that has kept nothing yet.
func newActionLog() *actionLog {
	return &actionLog{records: &actionRecords{}}
}

// Enabled reports true at every level: the actions are logged at Debug.
func (l *actionLog) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps record r when it is an "execute action" one.
func (l *actionLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "execute action" {
		return nil
	}
	var e executed
	read := func(a slog.Attr) bool {
		switch a.Key {
		case "workload":
			e.workload = a.Value.String()
		case "action":
			e.action = a.Value.String()
		}
		return true
	}
	for _, a := range l.attrs {
		read(a)
	}
	r.Attrs(read)
	l.records.mu.Lock()
	defer l.records.mu.Unlock()
	l.records.kept = append(l.records.kept, e)
	return nil
}

// WithAttrs returns a handler that keeps into the same records, with
// attrs read before each record's own.
func (l *actionLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &actionLog{records: l.records, attrs: append(l.attrs[:len(l.attrs):len(l.attrs)], attrs...)}
}

// WithGroup returns l: the records it keeps name their attributes at the
// top level.
func (l *actionLog) WithGroup(string) slog.Handler { return l }

// take returns the lines of the actions run for workload (a key,
// "shop/api") since the last take, in their order, and forgets every
// action kept so far, of every workload.
func (l *actionLog) take(workload string) []string {
	l.records.mu.Lock()
	defer l.records.mu.Unlock()
	var out []string
	for _, e := range l.records.kept {
		if e.workload == workload {
			out = append(out, e.action)
		}
	}
	l.records.kept = nil
	return out
}

// played is what one round (see round) did: the actions the controller
// executed for workload "api", as strategies.Action.String writes them,
// and the requests the fake API server saw (see requests).
type played struct {
	actions, requests []string
}

// play runs one round and returns what it did.
func (k *cluster) play() played {
	k.t.Helper()
	reqs := k.round()
	return played{actions: k.actions(), requests: reqs}
}

// playUntilQuiet runs rounds until one makes no request, and returns what
// each round before it did.
func (k *cluster) playUntilQuiet() []played {
	k.t.Helper()
	var rounds []played
	for range 30 {
		p := k.play()
		if len(p.requests) == 0 {
			return rounds
		}
		rounds = append(rounds, p)
	}
	k.t.Fatalf("still writing after 30 rounds: %v", rounds[len(rounds)-1].requests)
	return nil
}

// actions returns the actions executed for workload "api" since the last
// call. round calls it before it reconciles, so that after a round it
// returns that round's.
func (k *cluster) actions() []string {
	return k.log.take("shop/api")
}

// matches reports whether action line is want, where each * of want
// stands for any text: "hold out rs api-* app=api" matches the line of
// any ReplicaSet of api held out.
func matches(want, line string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(want), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(line)
}

// exactly checks that actions are the lines want, one for one and in
// their order (see matches); what names them in the failure.
func exactly(t *testing.T, what string, actions []string, want ...string) {
	t.Helper()
	ok := len(actions) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = matches(want[i], actions[i])
	}
	if !ok {
		t.Errorf("%s executed:\n  %s\nwant:\n  %s", what, strings.Join(actions, "\n  "), strings.Join(want, "\n  "))
	}
}

// showPlayed lists what each round did, for failure messages: its
// actions, and under them its requests.
func showPlayed(rounds []played) string {
	var b strings.Builder
	for i, p := range rounds {
		fmt.Fprintf(&b, "round %d:\n", i)
		for _, a := range p.actions {
			fmt.Fprintf(&b, "  %s\n", a)
		}
		for _, r := range p.requests {
			fmt.Fprintf(&b, "      %s\n", r)
		}
	}
	return b.String()
}
