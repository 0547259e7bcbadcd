package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// ownerCluster is a fake cluster where sync "team-b" plans, in namespace
// shop: ConfigMap mine is team-b's, ConfigMap theirs and Deployment api
// are team-a's, Deployment web-blue runs team-a's blue-green workload web,
// and ConfigMap plain was made with kubectl (no sync label).
func ownerCluster(t *testing.T) (*Applier, *fakedynamic.FakeDynamicClient) {
	t.Helper()
	objs := []runtime.Object{
		labelled("v1", "ConfigMap", "shop", "mine", "team-b", false),
		labelled("v1", "ConfigMap", "shop", "theirs", "team-a", false),
		labelled("v1", "ConfigMap", "shop", "plain", "", false),
		labelled("apps/v1", "Deployment", "shop", "api", "team-a", false),
		labelled("apps/v1", "Deployment", "shop", "web-blue", "team-a", false, contract.LabelWorkload, "web"),
	}
	gvrs := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}:                 "ConfigMapList",
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
	}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	return New(Config{Dynamic: dyn, Mapper: fixedMapper{mapper}, SyncName: "team-b"}), dyn
}

// desiredObject is a Git object of the commit planned, from file.
func desiredObject(apiVersion, kind, name, file string) manifest.Object {
	return manifest.Object{Obj: labelled(apiVersion, kind, "shop", name, "", false), Origin: manifest.Origin{File: file, Doc: 1}}
}

// lists counts the lists the fake cluster served.
func lists(dyn *fakedynamic.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" {
			n++
		}
	}
	return n
}

// TestPlanOwners: a sync plans its own objects, adopts those no sync
// labelled, and refuses, as a whole, a commit that declares an object
// another sync applied, naming each such object, its origin and both
// syncs.
func TestPlanOwners(t *testing.T) {
	tests := []struct {
		name    string
		desired []manifest.Object
		inv     []inventory.Entry
		// want is each object's action, or the refusals' texts.
		want    []string
		refused []string
		// lists is how many lists the plan makes.
		lists int
	}{
		{
			name: "own objects only: one list per scope, no look for others",
			desired: []manifest.Object{
				desiredObject("v1", "ConfigMap", "mine", "mine.yaml"),
			},
			inv:   []inventory.Entry{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "mine", Hash: "old"}},
			want:  []string{"ConfigMap shop/mine update"},
			lists: 1,
		},
		{
			name: "an unlabelled object is adopted, a new one created",
			desired: []manifest.Object{
				desiredObject("v1", "ConfigMap", "plain", "plain.yaml"),
				desiredObject("v1", "ConfigMap", "new", "new.yaml"),
			},
			// The adopted object is not listed as the sync's yet: the plan
			// creates it, which server-side apply makes an update.
			want:  []string{"ConfigMap shop/plain create", "ConfigMap shop/new create"},
			lists: 2,
		},
		{
			name: "another sync's ConfigMap and Deployment are refused",
			desired: []manifest.Object{
				desiredObject("v1", "ConfigMap", "mine", "mine.yaml"),
				desiredObject("v1", "ConfigMap", "theirs", "apps/theirs.yaml"),
				desiredObject("apps/v1", "Deployment", "api", "apps/api.yaml"),
				desiredObject("v1", "ConfigMap", "new", "new.yaml"),
			},
			refused: []string{
				`ConfigMap shop/theirs in apps/theirs.yaml (document 1) belongs to sync "team-a"; sync "team-b" does not take it over`,
				`Deployment shop/api in apps/api.yaml (document 1) belongs to sync "team-a"; sync "team-b" does not take it over`,
			},
			lists: 4,
		},
		{
			name: "a Deployment whose workload another sync runs under other names is refused",
			desired: []manifest.Object{
				desiredObject("apps/v1", "Deployment", "web", "web.yaml"),
			},
			refused: []string{`Deployment shop/web in web.yaml (document 1) belongs to sync "team-a"; sync "team-b" does not take it over`},
			lists:   2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, dyn := ownerCluster(t)
			inv := inventory.Inventory{}
			for _, e := range tt.inv {
				inv[e.Key()] = e
			}
			plan, err := a.Plan(context.Background(), tt.desired, inv, nil)
			if tt.refused != nil {
				if err == nil {
					t.Fatalf("plan succeeded, want refusals %q", tt.refused)
				}
				var owned *OwnerError
				if !errors.As(err, &owned) {
					t.Errorf("error %v is no *OwnerError", err)
				}
				if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.refused) {
					t.Errorf("refusals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.refused, "\n"))
				}
			} else {
				if err != nil {
					t.Fatalf("plan: %v", err)
				}
				var got []string
				for _, it := range plan.Items {
					got = append(got, it.Key().String()+" "+string(it.Action))
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("plan %q, want %q", got, tt.want)
				}
			}
			if n := lists(dyn); n != tt.lists {
				t.Errorf("%d lists, want %d", n, tt.lists)
			}
		})
	}
}

// arbiter is a fake API server of namespaced objects that orders the
// writes of a claim as the real one does: an apply creates an absent
// object whatever resourceVersion it carries, and updates a present one
// only when it carries none or the object's; a dry-run writes nothing.
// It logs each write as "<name> <sync label>".
type arbiter struct {
	mu      gosync.Mutex
	objs    map[string]*unstructured.Unstructured
	version int
	writes  []string
}

// newArbiter returns an arbiter holding objs, and a client of it.
func newArbiter(objs ...*unstructured.Unstructured) (*arbiter, *fakedynamic.FakeDynamicClient) {
	s := &arbiter{objs: map[string]*unstructured.Unstructured{}}
	for _, obj := range objs {
		s.version++
		obj.SetResourceVersion(strconv.Itoa(s.version))
		s.objs[obj.GetName()] = obj
	}
	dyn := fakedynamic.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("*", "*", s.react)
	return s, dyn
}

func (s *arbiter) react(action k8stesting.Action) (bool, runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gr := action.GetResource().GroupResource()
	switch a := action.(type) {
	case k8stesting.PatchActionImpl:
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(a.GetPatch()); err != nil {
			return true, nil, err
		}
		live, ok := s.objs[a.GetName()]
		if ok && obj.GetResourceVersion() != "" && obj.GetResourceVersion() != live.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gr, a.GetName(), errors.New("the object has been modified"))
		}
		if len(a.PatchOptions.DryRun) > 0 {
			return true, obj, nil
		}
		s.version++
		obj.SetResourceVersion(strconv.Itoa(s.version))
		s.objs[a.GetName()] = obj
		s.writes = append(s.writes, a.GetName()+" "+obj.GetLabels()[contract.LabelSync])
		return true, obj.DeepCopy(), nil
	case k8stesting.GetActionImpl:
		if live, ok := s.objs[a.GetName()]; ok {
			return true, live.DeepCopy(), nil
		}
		return true, nil, apierrors.NewNotFound(gr, a.GetName())
	}
	return false, nil, nil
}

// newItems are sync's items of ConfigMaps names in namespace shop, none
// of them among its live objects: what a first sync plans.
func newItems(sync string, names ...string) *Plan {
	plan := &Plan{}
	mapping := &meta.RESTMapping{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Scope: meta.RESTScopeNamespace}
	for _, name := range names {
		obj := labelled("v1", "ConfigMap", "shop", name, sync, false)
		plan.Items = append(plan.Items, &Item{Object: manifest.Object{Obj: obj, Origin: manifest.Origin{File: name + ".yaml", Doc: 1}},
			Mapping: mapping, Action: ActionCreate})
	}
	return plan
}

// TestClaim: the objects new to a sync are written one at a time in key
// order: created when absent, adopted when nobody's, applied when the
// sync's already; another sync's stops the apply there, with an
// *OwnerError, before anything after it is written.
func TestClaim(t *testing.T) {
	tests := []struct {
		name string
		live []*unstructured.Unstructured
		// writes are the writes the arbiter logs; refused is the error.
		writes  []string
		refused string
	}{
		{
			name:   "absent objects are created, in key order",
			writes: []string{"a team-b", "b team-b", "c team-b"},
		},
		{
			name:    "another sync's object, made since the plan, stops the claims at it",
			live:    []*unstructured.Unstructured{labelled("v1", "ConfigMap", "shop", "b", "team-a", false)},
			writes:  []string{"a team-b"},
			refused: `ConfigMap shop/b in b.yaml (document 1) belongs to sync "team-a"; sync "team-b" does not take it over`,
		},
		{
			name:   "an object nobody's is adopted",
			live:   []*unstructured.Unstructured{labelled("v1", "ConfigMap", "shop", "b", "", false)},
			writes: []string{"a team-b", "b team-b", "c team-b"},
		},
		{
			name:   "an object the sync labelled meanwhile is applied",
			live:   []*unstructured.Unstructured{labelled("v1", "ConfigMap", "shop", "b", "team-b", false)},
			writes: []string{"a team-b", "b team-b", "c team-b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dyn := newArbiter(tt.live...)
			a := New(Config{Dynamic: dyn, SyncName: "team-b"})
			res, err := a.Apply(context.Background(), newItems("team-b", "c", "a", "b"), nil)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("apply: %v", err)
			case tt.refused != "":
				var owned *OwnerError
				if !errors.As(err, &owned) || err.Error() != tt.refused {
					t.Errorf("apply failed with %v, want the *OwnerError %q", err, tt.refused)
				}
			}
			if !slices.Equal(s.writes, tt.writes) {
				t.Errorf("writes %q, want %q", s.writes, tt.writes)
			}
			if len(res.Changes) != len(tt.writes) {
				t.Errorf("%d changes, want one per write: %v", len(res.Changes), res.Changes)
			}
		})
	}
}

// TestClaimRace: two syncs whose first syncs plan the same twenty new
// ConfigMaps at the same moment, each with one of its own beside them.
// Whichever writes first, one sync applies every shared object and the
// other is refused, naming both, having written none of them.
func TestClaimRace(t *testing.T) {
	var shared []string
	for i := range 20 {
		shared = append(shared, fmt.Sprintf("shared-%02d", i))
	}
	for round := range 50 {
		s, dyn := newArbiter()
		syncs := []string{"team-a", "team-b"}
		errs := make([]error, len(syncs))
		var wg gosync.WaitGroup
		for i, name := range syncs {
			a := New(Config{Dynamic: dyn, SyncName: name})
			plan := newItems(name, append([]string{name + "-only"}, shared...)...)
			wg.Go(func() { _, errs[i] = a.Apply(context.Background(), plan, nil) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: the syncs ended with %v and %v, want one refused", round, errs[0], errs[1])
		}
		winner, loser := syncs[0], syncs[1]
		if errs[0] != nil {
			winner, loser = loser, winner
		}
		var owned *OwnerError
		refusal := errors.Join(errs...)
		if !errors.As(refusal, &owned) || owned.Owner != winner || owned.Sync != loser {
			t.Fatalf("round %d: %s refused with %v, want an *OwnerError naming %s the owner", round, loser, refusal, winner)
		}
		for _, name := range shared {
			if got := s.objs[name].GetLabels()[contract.LabelSync]; got != winner {
				t.Errorf("round %d: %s is %s's, want %s's", round, name, got, winner)
			}
		}
		for _, w := range s.writes {
			if strings.HasPrefix(w, "shared-") && strings.HasSuffix(w, " "+loser) {
				t.Errorf("round %d: the refused sync wrote %s", round, w)
			}
		}
	}
}
