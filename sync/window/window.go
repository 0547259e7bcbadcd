// Package window decides whether changes may reach the cluster now: sync
// windows given as `deny CRON DURATION` or `allow CRON DURATION`, as in Argo
// CD. A deny window holds changes while it is open; when allow windows are
// given, changes are held whenever none of them is open. Rollouts already
// in flight are not affected: a window only holds new changes.
package window

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Kinds of window, and limits.
const (
	// Deny holds changes while the window is open.
	Deny = "deny"
	// Allow lets changes through while the window is open.
	Allow = "allow"

	// maxActivations bounds the walk to a window's latest activation: a
	// window of one week activated every minute has 10,080.
	maxActivations = 20000
)

// parser reads standard five-field cron expressions and descriptors such as
// @daily.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Window is one sync window: it opens at every activation of its schedule
// and stays open for its duration.
type Window struct {
	Kind     string
	Spec     string
	Duration time.Duration
	schedule cron.Schedule
}

// Parse reads "deny|allow CRON DURATION", e.g. "deny 0 22 * * * 8h": a
// window that opens at 22:00 every day and closes 8 hours later. The cron
// expression is in the time zone of the times later given to Windows.Held
// (the daemon passes UTC).
func Parse(s string) (Window, error) {
	fields := strings.Fields(s)
	if len(fields) < 3 {
		return Window{}, fmt.Errorf("parse window %q: want \"deny|allow CRON DURATION\"", s)
	}
	kind, spec, dur := fields[0], strings.Join(fields[1:len(fields)-1], " "), fields[len(fields)-1]
	if kind != Deny && kind != Allow {
		return Window{}, fmt.Errorf("parse window %q: kind %q is neither %q nor %q", s, kind, Deny, Allow)
	}
	schedule, err := parser.Parse(spec)
	if err != nil {
		return Window{}, fmt.Errorf("parse window %q: cron expression %q: %w", s, spec, err)
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		return Window{}, fmt.Errorf("parse window %q: duration %q: %w", s, dur, err)
	}
	if d <= 0 {
		return Window{}, fmt.Errorf("parse window %q: duration %s must be positive", s, d)
	}
	return Window{Kind: kind, Spec: spec, Duration: d, schedule: schedule}, nil
}

// String is the window as it was given.
func (w Window) String() string { return fmt.Sprintf("%s %s %s", w.Kind, w.Spec, w.Duration) }

// openAt reports whether the window is open at t, and when it closes.
//
// The window is open at t when it was activated in (t-Duration, t]. The
// schedule only answers "next activation after", so ask it for the first
// activation after t-Duration: with "0 22 * * *" and 8h, at 03:00 that is
// 22:00 the day before (after 19:00), which is <= 03:00, so the window is
// open; at 07:00 it is 22:00 today (after 23:00 yesterday), which is
// > 07:00, so it is shut. An open window closes Duration after its latest
// activation up to t: for "* * * * *" and 1h, at 12:30 that is 13:30, not
// 12:31 (the first activation after 11:30 plus 1h).
func (w Window) openAt(t time.Time) (bool, time.Time) {
	start := w.schedule.Next(t.Add(-w.Duration))
	if start.After(t) {
		return false, time.Time{}
	}
	for i := 0; i < maxActivations; i++ {
		next := w.schedule.Next(start)
		if next.After(t) || next.IsZero() {
			break
		}
		start = next
	}
	return true, start.Add(w.Duration)
}

// Windows is the set of windows of one sync.
type Windows []Window

// ParseAll parses every window.
func ParseAll(specs []string) (Windows, error) {
	ws := make(Windows, 0, len(specs))
	for _, s := range specs {
		w, err := Parse(s)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// Held reports whether changes are held at now and, if so, until when and
// why. A deny window that is open holds changes until it closes (the latest
// close when several are open). With allow windows, changes are held when
// none is open, until the next one opens.
func (ws Windows) Held(now time.Time) (held bool, until time.Time, reason string) {
	var denyUntil time.Time
	var deny Window
	hasAllow, allowOpen := false, false
	var nextAllow time.Time
	for _, w := range ws {
		open, closes := w.openAt(now)
		switch w.Kind {
		case Deny:
			if open && closes.After(denyUntil) {
				denyUntil, deny = closes, w
			}
		case Allow:
			hasAllow = true
			if open {
				allowOpen = true
			}
			if next := w.schedule.Next(now); nextAllow.IsZero() || next.Before(nextAllow) {
				nextAllow = next
			}
		}
	}
	if !denyUntil.IsZero() {
		return true, denyUntil, fmt.Sprintf("deny window %q is open", deny.String())
	}
	if hasAllow && !allowOpen {
		return true, nextAllow, "no allow window is open"
	}
	return false, time.Time{}, ""
}
