package apply

import (
	"context"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/internal/prune"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// ObjectDiff is what a sync would change of one object, as a unified diff
// of its YAML, live ("a/") against what the server-side dry-run returns
// ("b/"); a created object diffs from nothing, a pruned one to nothing.
type ObjectDiff struct {
	Key  manifest.Key
	Diff string
}

// diffContext is how many unchanged lines surround each change.
const diffContext = 3

// Diff dry-runs every item of plan, a plan of PlanDiff (which keeps the
// live objects whole), with server-side apply and returns, in plan order,
// the diff of each object the apply would change, then those the prune
// would delete. Fields the server keeps to itself
// (managedFields, resourceVersion, generation, uid, creationTimestamp,
// status) are left out, so only what the sync changes shows.
func (a *Applier) Diff(ctx context.Context, plan *Plan) ([]ObjectDiff, error) {
	var out []ObjectDiff
	for _, it := range plan.Items {
		var want *unstructured.Unstructured
		if it.Mapping == nil {
			want = it.Object.Obj // a kind this commit's CRD brings: cannot be dry-run yet
		} else {
			applied, err := a.patch(ctx, it, a.cfg.FieldManager, true)
			if err != nil {
				return nil, Rejection(it, "dry-run", err)
			}
			want = applied
		}
		d, err := DiffObjects(it.Key(), it.Live, want)
		if err != nil {
			return nil, err
		}
		if d != "" {
			out = append(out, ObjectDiff{Key: it.Key(), Diff: d})
		}
	}
	for _, e := range plan.Prune {
		_, live, err := a.liveEntry(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", e.Key(), err)
		}
		if live == nil || !prune.Allowed(live, a.cfg.SyncName) {
			continue
		}
		d, err := DiffObjects(e.Key(), live, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ObjectDiff{Key: e.Key(), Diff: d})
	}
	return out, nil
}

// DiffObjects is the unified diff of two versions of an object (nil for
// none), "" when they are the same, on the fields Diff compares. The
// values of a Secret do not show: the diff says which keys change (see
// valueFree).
func DiffObjects(key manifest.Key, before, after *unstructured.Unstructured) (string, error) {
	before, after = valueFree(key, before, after)
	a, err := comparable(before)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", key, err)
	}
	b, err := comparable(after)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", key, err)
	}
	if a == b {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: "a/" + key.String(), ToFile: "b/" + key.String(), Context: diffContext,
	})
}

// lines splits text into lines for the diff; none for "".
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return difflib.SplitLines(text)
}

// comparable is obj as YAML without the fields the server keeps to itself;
// "" for nil.
func comparable(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	c := obj.DeepCopy()
	c.SetManagedFields(nil)
	c.SetResourceVersion("")
	c.SetGeneration(0)
	c.SetUID("")
	unstructured.RemoveNestedField(c.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(c.Object, "status")
	b, err := yaml.Marshal(c.Object)
	return string(b), err
}
