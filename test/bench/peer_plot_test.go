//go:build bench

package bench

import (
	"fmt"
	"math"
	"strings"
)

// plotSeries is one line of a plot: a tool's median at each size.
type plotSeries struct {
	name   string
	color  string
	dashed bool
	xs, ys []float64
}

// The plot's geometry, in SVG user units: an 820 x 440 canvas with room
// for the axis labels on the left and bottom and the legend (up to 36
// characters a line) on the right.
const (
	plotWidth, plotHeight = 820, 440
	plotLeft, plotRight   = 70, 540
	plotTop, plotBottom   = 40, 380
)

// rolloutPlot draws the time until all workloads were done against N, for
// each tool and strategy.
func (r *peerResults) rolloutPlot() string {
	var series []plotSeries
	for _, tool := range []struct{ name, label, color string }{{toolPlimsoll, "plimsoll", "#1f77b4"}, {toolArgo, "Argo Rollouts", "#d62728"}} {
		for _, phase := range []string{"canary", "blue-green"} {
			s := plotSeries{name: tool.label + ", " + phase, color: tool.color, dashed: phase == "blue-green"}
			for _, n := range r.sizes("rollout") {
				if v, _ := medianCellOf(allDone, r.phasesOf("rollout", tool.name, n, phase)); !math.IsNaN(v) {
					s.xs, s.ys = append(s.xs, float64(n)), append(s.ys, v)
				}
			}
			series = append(series, s)
		}
	}
	return svgPlot("Rollout: time until all N workloads are done", "N (workloads per strategy)", "seconds", series)
}

// syncPlot draws the time from the commit of N ConfigMaps to applied
// against N, for each tool.
func (r *peerResults) syncPlot() string {
	var series []plotSeries
	for _, tool := range []struct{ name, label, color string }{
		{toolPlimsoll, "plimsoll run", "#1f77b4"}, {toolFlux, "Flux", "#d62728"},
		{toolOnce, "plimsoll sync --once", "#2ca02c"}, {toolKubectl, "kubectl apply --server-side", "#7f7f7f"},
	} {
		s := plotSeries{name: tool.label, color: tool.color, dashed: tool.name == toolOnce || tool.name == toolKubectl}
		for _, n := range r.sizes("sync") {
			if v, _ := medianCellOf(applied, r.phasesOf("sync", tool.name, n, "cold")); !math.IsNaN(v) {
				s.xs, s.ys = append(s.xs, float64(n)), append(s.ys, v)
			}
		}
		series = append(series, s)
	}
	return svgPlot("Sync: commit of N ConfigMaps to applied", "N (ConfigMaps)", "seconds", series)
}

// svgPlot draws series as lines with markers on linear axes from 0 to a
// round number above the largest value, with a legend.
func svgPlot(title, xLabel, yLabel string, series []plotSeries) string {
	maxX, maxY := 0.0, 0.0
	for _, s := range series {
		for i := range s.xs {
			maxX, maxY = math.Max(maxX, s.xs[i]), math.Max(maxY, s.ys[i])
		}
	}
	xStep, yStep := niceStep(maxX), niceStep(maxY)
	xTop, yTop := math.Ceil(maxX/xStep)*xStep, math.Ceil(maxY/yStep)*yStep
	px := func(x float64) float64 { return plotLeft + x/xTop*(plotRight-plotLeft) }
	py := func(y float64) float64 { return plotBottom - y/yTop*(plotBottom-plotTop) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, plotHeight)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">%s</text>`+"\n", plotLeft, escape(title))
	if maxX == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no runs yet</text>`+"\n</svg>\n", plotLeft, (plotTop+plotBottom)/2)
		return b.String()
	}
	for x := 0.0; x <= xTop+xStep/2; x += xStep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px(x), plotTop, px(x), plotBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", px(x), plotBottom+16, x)
	}
	for y := 0.0; y <= yTop+yStep/2; y += yStep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, py(y), plotRight, py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", plotLeft-6, py(y)+4, y)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+36, escape(xLabel))
	fmt.Fprintf(&b, `<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>`+"\n",
		(plotTop+plotBottom)/2, (plotTop+plotBottom)/2, escape(yLabel))
	for i, s := range series {
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var points []string
		for j := range s.xs {
			points = append(points, fmt.Sprintf("%.1f,%.1f", px(s.xs[j]), py(s.ys[j])))
		}
		if len(points) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(points, " "), s.color, dash)
		}
		for j := range s.xs {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, N=%g: %.1f s</title></circle>`+"\n",
				px(s.xs[j]), py(s.ys[j]), s.color, escape(s.name), s.xs[j], s.ys[j])
		}
		ly := plotTop + 10 + i*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", plotRight+15, ly, plotRight+40, ly, s.color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", plotRight+46, ly+4, escape(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceStep is the grid step: the smallest of 1, 2, 5 or 10 times a power
// of ten that is at least max/5, so that the axis, rounded up to a whole
// step, has 2 to 5 parts: for max 460, 100 (0..500); for 37, 10 (0..40);
// for 130, 50 (0..150).
func niceStep(max float64) float64 {
	if max <= 0 {
		return 1
	}
	raw := max / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

// escape makes s safe as SVG text.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
