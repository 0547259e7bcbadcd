package sync

import (
	"context"
	"errors"
	"slices"
	"strings"

	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// ChartRenderer renders the Helm charts of a commit; *helm.Renderer
// implements it. StartSync is called once per sync, before the render.
type ChartRenderer interface {
	manifest.Charts
	StartSync()
}

// HookRunner runs the hooks of a chart release for one Helm event
// (manifest.HookPreInstall...); *helm.Hooks implements it. An error names
// the hook that failed.
type HookRunner interface {
	Run(ctx context.Context, out *manifest.ChartOutput, event string) error
}

// chartRun is what a sync does with the hooks of one chart release.
type chartRun struct {
	out *manifest.ChartOutput
	// pre and post are the events to run, "" for none.
	pre, post string
}

// chartRuns decides, for each chart release of a commit, which hooks run:
// the install hooks when none of its objects is in the inventory yet (the
// release's first sync), the upgrade hooks when the plan creates or
// updates any of its objects (Git changed the release); none when the
// release is as applied (a poll, or a drift being restored).
func chartRuns(charts []*manifest.ChartOutput, plan *apply.Plan, inv inventory.Inventory) []chartRun {
	var runs []chartRun
	for _, out := range charts {
		if len(out.Hooks) == 0 {
			continue
		}
		key := out.Release.Key()
		installed, changed := false, false
		for _, it := range plan.Items {
			if it.Object.Release == nil || it.Object.Release.Key() != key {
				continue
			}
			if _, ok := inv[it.Key()]; ok {
				installed = true
			}
			if it.Action == apply.ActionCreate || it.Action == apply.ActionUpdate {
				changed = true
			}
		}
		switch {
		case !installed:
			runs = append(runs, chartRun{out: out, pre: manifest.HookPreInstall, post: manifest.HookPostInstall})
		case changed:
			runs = append(runs, chartRun{out: out, pre: manifest.HookPreUpgrade, post: manifest.HookPostUpgrade})
		}
	}
	return runs
}

// runHooks runs the pre (post false) or post hooks of the runs, in order.
func (s *Syncer) runHooks(ctx context.Context, runs []chartRun, post bool) error {
	if s.cfg.Hooks == nil {
		return nil
	}
	for _, r := range runs {
		event := r.pre
		if post {
			event = r.post
		}
		if err := s.cfg.Hooks.Run(ctx, r.out, event); err != nil {
			return &HookError{Event: event, Err: err}
		}
	}
	return nil
}

// HookError is a chart hook that failed: the sync stops there.
type HookError struct {
	// Event is the hook's event.
	Event string
	Err   error
}

func (e *HookError) Error() string { return e.Err.Error() }
func (e *HookError) Unwrap() error { return e.Err }

// createOnly leaves alone the objects to create only (a chart's CRDs under
// the Create policy) that exist already.
func createOnly(plan *apply.Plan) {
	for _, it := range plan.Items {
		if it.Object.CreateOnly && it.Live != nil {
			it.Action = apply.ActionNone
		}
	}
}

// chartSummary is the status line of the charts of a commit, "" for none:
// "charts: web (podinfo 6.5.4), api (api 1.0.0)", with their warnings.
func chartSummary(charts []*manifest.ChartOutput) string {
	if len(charts) == 0 {
		return ""
	}
	line := "charts: " + strings.Join(manifest.ChartsOf(charts), ", ")
	var warnings []string
	for _, c := range charts {
		warnings = append(warnings, c.Warnings...)
	}
	slices.Sort(warnings)
	return joinNonEmpty(line, strings.Join(warnings, "; "))
}

// confineHooks refuses, for a daemon limited to namespaces, a hook that
// would be written elsewhere, as Confine refuses objects.
func confineHooks(charts []*manifest.ChartOutput, namespaces []string) error {
	if len(namespaces) == 0 {
		return nil
	}
	var errs []error
	for _, c := range charts {
		for _, h := range c.Hooks {
			ns := h.Obj.GetNamespace()
			if ns == "" {
				ns = h.DefaultNamespace
			}
			if !slices.Contains(namespaces, ns) {
				errs = append(errs, &manifest.Error{Origin: h.Origin, Field: "metadata.namespace", Reason: "the hook's namespace " + ns + " is not one this daemon writes in"})
			}
		}
	}
	return errors.Join(errs...)
}
