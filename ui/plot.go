package ui

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"plimsoll.dev/plimsoll/strategies"
)

// The plots' frame, in the units of their viewBox: they scale to the
// width of the page.
const (
	plotWidth   = 640
	plotHeight  = 180
	plotLeft    = 56 // room for the value labels
	plotRight   = 12
	plotTop     = 14
	plotBottom  = 26 // room for the time labels
	barHeight   = 28
	timeLayout  = "15:04:05"
	minTimeSpan = 10 * time.Second
)

// threshold finds the number a condition compares result with:
// "result < 0.01", "0.05 <= result"; anything else has none to draw.
var threshold = regexp.MustCompile(`^\s*(?:result\s*(?:<=|>=|<|>|==)\s*([-+0-9.eE]+)|([-+0-9.eE]+)\s*(?:<=|>=|<|>|==)\s*result)\s*$`)

// plot is an SVG picture, laid out: the templates draw its parts as
// they are. Every plot comes with a table of the same data on its page.
type plot struct {
	ID          string
	Title, Desc string
	W, H        int
	Lines       []plotLine
	Marks       []plotMark
	Rules       []plotRule
	Bars        []plotBar
	Ticks       []plotTick
	// Axis is where the time axis is drawn, 0 for none.
	Axis float64
	// Empty says there is nothing to draw; the page says so instead.
	Empty bool
}

// plotLine is a polyline through Points ("x,y x,y").
type plotLine struct {
	Points, Class, Label string
}

// plotMark is a point of a measurement or an Event: a shape by outcome,
// so that it is told apart without color, drawn as the path D.
type plotMark struct {
	X, Y     float64
	D, Class string
	Title    string
}

// plotRule is a horizontal line across the plot: a condition's threshold.
type plotRule struct {
	Y            float64
	Class, Label string
}

// plotBar is a span of a timeline.
type plotBar struct {
	X, Y, W, H          float64
	Class, Label, Title string
}

// plotTick is a label on an axis.
type plotTick struct {
	X, Y         float64
	Text, Anchor string
}

// frame maps times and values into the plot's area.
type frame struct {
	from, to time.Time
	lo, hi   float64
}

func (f frame) x(t time.Time) float64 {
	span := f.to.Sub(f.from)
	if span <= 0 {
		return plotLeft
	}
	return round(plotLeft + float64(plotWidth-plotLeft-plotRight)*float64(t.Sub(f.from))/float64(span))
}

func (f frame) y(v float64) float64 {
	if f.hi == f.lo {
		return plotHeight / 2
	}
	return round(plotTop + float64(plotHeight-plotTop-plotBottom)*(f.hi-v)/(f.hi-f.lo))
}

// timeTicks labels the start and the end of the time axis.
func (f frame) timeTicks() []plotTick {
	return []plotTick{
		{X: plotLeft, Y: plotHeight - 8, Text: f.from.UTC().Format(timeLayout), Anchor: "start"},
		{X: plotWidth - plotRight, Y: plotHeight - 8, Text: f.to.UTC().Format(timeLayout) + " UTC", Anchor: "end"},
	}
}

// valueTicks labels the bottom, the middle and the top of the value axis.
func (f frame) valueTicks() []plotTick {
	var out []plotTick
	for _, v := range []float64{f.lo, (f.lo + f.hi) / 2, f.hi} {
		out = append(out, plotTick{X: plotLeft - 6, Y: f.y(v) + 4, Text: strconv.FormatFloat(v, 'g', 3, 64), Anchor: "end"})
	}
	return out
}

// measurementsPlot draws the measurements of one metric against its
// conditions: a point per measurement (a circle for successful, a cross
// for failed, a triangle for inconclusive, a square for an error, at the
// bottom, having no value) and a line at each condition's threshold. A
// value true or false is drawn as 1 or 0.
func measurementsPlot(id, metric string, points []measurement, success, failure string, started time.Time) plot {
	p := plot{ID: domID(id), W: plotWidth, H: plotHeight, Axis: plotHeight - plotBottom, Title: "Measurements of " + metric,
		Desc: fmt.Sprintf("%d measurements; success condition %s; failure condition %s", len(points), orNone(success), orNone(failure))}
	var values []float64
	for _, m := range points {
		if v, ok := numeric(m.Value); ok {
			values = append(values, v)
		}
	}
	rules := map[string]float64{}
	for class, cond := range map[string]string{"success": success, "failure": failure} {
		if v, ok := thresholdOf(cond); ok {
			rules[class] = v
			values = append(values, v)
		}
	}
	if len(points) == 0 {
		p.Empty = true
		return p
	}
	f := frame{from: started, to: points[len(points)-1].At}
	if f.from.IsZero() || f.from.After(points[0].At) {
		f.from = points[0].At
	}
	if f.to.Sub(f.from) < minTimeSpan {
		f.to = f.from.Add(minTimeSpan)
	}
	f.lo, f.hi = spread(values)
	for _, class := range []string{"success", "failure"} {
		if v, ok := rules[class]; ok {
			cond := success
			if class == "failure" {
				cond = failure
			}
			p.Rules = append(p.Rules, plotRule{Y: f.y(v), Class: "rule-" + class, Label: class + ": " + cond})
		}
	}
	for _, m := range points {
		mark := plotMark{X: f.x(m.At), Class: "outcome-" + strings.ToLower(string(m.Outcome)),
			Title: fmt.Sprintf("%s %s: %s", m.At.UTC().Format(timeLayout), m.Outcome, orNone(m.Value))}
		v, ok := numeric(m.Value)
		if ok {
			mark.Y = f.y(v)
		} else {
			mark.Y = plotHeight - plotBottom
		}
		mark.D = markPath(shapeOf(m.Outcome), mark.X, mark.Y)
		p.Marks = append(p.Marks, mark)
	}
	p.Ticks = append(f.timeTicks(), f.valueTicks()...)
	return p
}

// shapeOf is the shape of a measurement's point.
func shapeOf(o strategies.Outcome) string {
	switch o {
	case strategies.OutcomeSuccessful:
		return "circle"
	case strategies.OutcomeFailed:
		return "cross"
	case strategies.OutcomeInconclusive:
		return "triangle"
	}
	return "square"
}

// endpointsPlot draws the ready endpoints of a Service over time: a step
// line per group (canary, stable, blue, green) and one for the total,
// from the first sample kept to now.
func endpointsPlot(id, service string, samples []endpointSample, now time.Time) plot {
	p := plot{ID: domID(id), W: plotWidth, H: plotHeight, Axis: plotHeight - plotBottom, Title: "Ready endpoints of Service " + service + " over time"}
	if len(samples) == 0 {
		p.Empty = true
		return p
	}
	f := frame{from: samples[0].At, to: now}
	if f.to.Sub(f.from) < minTimeSpan {
		f.from = f.to.Add(-minTimeSpan)
	}
	groups := []string{"total"}
	most := 0
	for _, s := range samples {
		total := 0
		for _, g := range s.Groups {
			total += g.Ready
			if !slices.Contains(groups, g.Group) {
				groups = append(groups, g.Group)
			}
		}
		most = max(most, total)
	}
	f.lo, f.hi = 0, float64(max(most, 1))
	for _, g := range groups {
		var pts []string
		prevY := -1.0
		for i, s := range samples {
			y := f.y(float64(countOf(s, g)))
			x := f.x(s.At)
			if i > 0 {
				pts = append(pts, fmt.Sprintf("%g,%g", x, prevY)) // the step: the count held until now
			}
			pts = append(pts, fmt.Sprintf("%g,%g", x, y))
			prevY = y
		}
		pts = append(pts, fmt.Sprintf("%g,%g", f.x(f.to), prevY))
		p.Lines = append(p.Lines, plotLine{Points: strings.Join(pts, " "), Class: "group-" + g, Label: g})
	}
	last := samples[len(samples)-1]
	var parts []string
	for _, g := range last.Groups {
		parts = append(parts, fmt.Sprintf("%d %s", g.Ready, g.Group))
	}
	p.Desc = fmt.Sprintf("%d changes since %s UTC; now %d ready (%s)", len(samples), f.from.UTC().Format(timeLayout),
		countOf(last, "total"), orNone(strings.Join(parts, ", ")))
	p.Ticks = append(f.timeTicks(), plotTick{X: plotLeft - 6, Y: f.y(0) + 4, Text: "0", Anchor: "end"},
		plotTick{X: plotLeft - 6, Y: f.y(f.hi) + 4, Text: strconv.Itoa(int(f.hi)), Anchor: "end"})
	return p
}

// countOf is the ready endpoints of group g in s ("total": of all).
func countOf(s endpointSample, g string) int {
	n := 0
	for _, c := range s.Groups {
		if g == "total" || c.Group == g {
			n += c.Ready
		}
	}
	return n
}

// timelinePlot draws the rollout of the current revision: a span per
// status it had (its phase and, for a canary, its step), from the first
// status the view saw of it to now, and a mark at each Event about it
// (analysis verdicts, commands, failures) since then.
func timelinePlot(revision int64, statuses []statusEntry, events []eventLine, now time.Time) plot {
	p := plot{ID: "timeline", W: plotWidth, H: barHeight + 40, Title: fmt.Sprintf("Timeline of revision %d", revision)}
	var spans []statusEntry
	for _, s := range statuses {
		if s.Revision == revision {
			spans = append(spans, s)
		}
	}
	if len(spans) == 0 {
		p.Empty = true
		return p
	}
	f := frame{from: spans[0].At, to: now}
	if f.to.Sub(f.from) < minTimeSpan {
		f.from = f.to.Add(-minTimeSpan)
	}
	for i, s := range spans {
		end := f.to
		if i+1 < len(spans) {
			end = spans[i+1].At
		}
		label := s.Phase
		if s.Step != "" {
			label = "step " + s.Step
		}
		x := f.x(s.At)
		w := max(f.x(end)-x, 1)
		if w < float64(7*len(label)) {
			label = "" // no room: the span's title and the table say it
		}
		p.Bars = append(p.Bars, plotBar{X: x, Y: plotTop, W: w, H: barHeight,
			Class: "phase-" + strings.ToLower(s.Phase), Label: label,
			Title: fmt.Sprintf("%s UTC %s: %s", s.At.UTC().Format(timeLayout), s.Phase, s.Message)})
	}
	for _, e := range events {
		if e.At.Before(f.from) {
			continue
		}
		class := "event"
		if e.Warning {
			class = "event-warning"
		}
		x, y := f.x(e.At), float64(plotTop+barHeight+8)
		p.Marks = append(p.Marks, plotMark{X: x, Y: y, D: markPath("triangle", x, y), Class: class,
			Title: fmt.Sprintf("%s UTC %s: %s", e.At.UTC().Format(timeLayout), e.Reason, e.Message)})
	}
	p.Desc = fmt.Sprintf("%d statuses and %d events since %s UTC", len(spans), len(p.Marks), f.from.UTC().Format(timeLayout))
	ticks := f.timeTicks()
	for i := range ticks {
		ticks[i].Y = float64(p.H) - 4
	}
	p.Ticks = ticks
	return p
}

// markPath is the SVG path of a mark of shape centred on x, y, 8 units
// across.
func markPath(shape string, x, y float64) string {
	switch shape {
	case "circle":
		return fmt.Sprintf("M%g,%g a4,4 0 1,0 8,0 a4,4 0 1,0 -8,0", x-4, y)
	case "cross":
		return fmt.Sprintf("M%g,%g l8,8 m0,-8 l-8,8", x-4, y-4)
	case "triangle":
		return fmt.Sprintf("M%g,%g l5,9 h-10 z", x, y-5)
	}
	return fmt.Sprintf("M%g,%g h8 v8 h-8 z", x-4, y-4)
}

// domID makes s an element id: letters, digits and hyphens.
func domID(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// thresholdOf is the number a condition compares result with, when it is
// that simple.
func thresholdOf(cond string) (float64, bool) {
	m := threshold.FindStringSubmatch(cond)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1]+m[2], 64)
	return v, err == nil
}

// numeric is a measured value as a number: a number, or true and false
// as 1 and 0.
func numeric(value string) (float64, bool) {
	switch value {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	v, err := strconv.ParseFloat(value, 64)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// spread is the range of the value axis: the values' with a tenth of
// room either side, or one either side of a single value.
func spread(values []float64) (lo, hi float64) {
	if len(values) == 0 {
		return 0, 1
	}
	lo, hi = slices.Min(values), slices.Max(values)
	pad := (hi - lo) / 10
	if pad == 0 {
		pad = math.Abs(lo) / 10
	}
	if pad == 0 {
		pad = 1
	}
	return lo - pad, hi + pad
}

// round keeps two decimals: enough for a picture, and a stable text.
func round(v float64) float64 {
	return math.Round(v*100) / 100
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
