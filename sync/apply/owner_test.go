package apply

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"

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
			plan, err := a.Plan(context.Background(), tt.desired, inv)
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
