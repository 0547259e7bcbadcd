package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
)

// identity is a team's client that answers SelfSubjectAccessReviews from
// granted ("patch pods", "delete deployments.apps") and counts them.
type identity struct {
	*fake.Clientset
	granted map[string]bool
	asked   []string
}

func newIdentity(granted ...string) *identity {
	id := &identity{Clientset: fake.NewClientset(), granted: map[string]bool{}}
	for _, g := range granted {
		id.granted[g] = true
	}
	id.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r := review.Spec.ResourceAttributes
		what := r.Verb + " " + resourceName(right{group: r.Group, resource: r.Resource})
		id.asked = append(id.asked, what)
		review.Status.Allowed = id.granted[what]
		return true, review, nil
	})
	return id
}

// everything is every right of every strategy.
var everything = []string{"create deployments.apps", "update deployments.apps", "patch deployments.apps", "delete deployments.apps",
	"patch replicasets.apps", "delete replicasets.apps", "patch pods", "delete pods", "patch services",
	"patch horizontalpodautoscalers.autoscaling"}

// TestCheckRights: a workload of a sync that writes as its own identity
// is refused before anything is applied when that identity lacks any
// write its strategy makes, naming the verb, the resource, the strategy
// and a role that grants it; each strategy asks for its own rights only;
// a granted right is asked once per commit, a refused one again; a sync
// written with the daemon's rights asks nothing.
func TestCheckRights(t *testing.T) {
	canary := map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "api"}
	blueGreen := map[string]string{contract.AnnotationStrategy: contract.StrategyBlueGreen, contract.AnnotationActiveService: "api"}
	wants := map[string][]string{
		"rolling":    {"create deployments.apps", "update deployments.apps", "patch deployments.apps", "patch replicasets.apps"},
		"canary":     {"create deployments.apps", "update deployments.apps", "patch deployments.apps", "patch replicasets.apps", "delete deployments.apps", "delete replicasets.apps", "patch pods", "delete pods", "patch services"},
		"blue-green": {"create deployments.apps", "update deployments.apps", "patch deployments.apps", "patch replicasets.apps", "delete deployments.apps", "patch services"},
	}
	for _, tt := range []struct {
		strategy    string
		annotations map[string]string
	}{{"rolling", nil}, {"canary", canary}, {"blue-green", blueGreen}} {
		for _, missing := range wants[tt.strategy] {
			var granted []string
			for _, g := range everything {
				if g != missing {
					granted = append(granted, g)
				}
			}
			c, _ := rightsController(t.Context(), newIdentity(granted...))
			err := c.checkDeployment(context.Background(), "team-a", teamDeployment(tt.annotations), []string{"api"})
			var refused *RightError
			if !errors.As(err, &refused) {
				t.Errorf("%s without %q: %v, want a refusal", tt.strategy, missing, err)
				continue
			}
			verb, resource, _ := strings.Cut(missing, " ")
			for _, want := range []string{"sync team-a", "may not " + verb + " " + resource + " in namespace shop", "the " + tt.strategy + " strategy", "edit role"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s without %q: %q does not say %q", tt.strategy, missing, err, want)
				}
			}
			if c.queue.Len() != 0 {
				t.Errorf("%s without %q: the refused workload was queued", tt.strategy, missing)
			}
		}
		c, id := rightsController(t.Context(), newIdentity(everything...))
		for range 2 {
			if err := c.checkDeployment(context.Background(), "team-a", teamDeployment(tt.annotations), []string{"api"}); err != nil {
				t.Fatalf("%s with every right: %v", tt.strategy, err)
			}
		}
		if got := strings.Join(id.asked, ", "); got != strings.Join(wants[tt.strategy], ", ") {
			t.Errorf("%s asked for %s, want %s, once each", tt.strategy, got, strings.Join(wants[tt.strategy], ", "))
		}
	}

	// The daemon's own sync asks nothing.
	own := newIdentity()
	c := New(Config{Client: own.Clientset})
	if err := c.checkDeployment(context.Background(), "root", teamDeployment(canary), []string{"api"}); err != nil || len(own.asked) != 0 {
		t.Errorf("the daemon's own sync: %v after asking %q, want nothing asked", err, own.asked)
	}
}

// TestCheckRightsOfASwitch: a workload that leaves the canary strategy
// for rolling needs the canary's rights too, to retire what the canary
// runs.
func TestCheckRightsOfASwitch(t *testing.T) {
	id := newIdentity("create deployments.apps", "update deployments.apps", "patch deployments.apps", "patch replicasets.apps")
	live := teamDeployment(map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "api"})
	live.Name = "api-canary"
	live.Labels[contract.LabelWorkload] = "api"
	c, _ := rightsController(t.Context(), id, live)
	err := c.checkDeployment(context.Background(), "team-a", teamDeployment(nil), nil)
	if !strings.Contains(fmtErr(err), "may not delete deployments.apps") {
		t.Errorf("a switch from canary to rolling: %v, want the canary's delete refused", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// rightsController is a controller whose sync team-a writes as id, with
// live in its caches and the Service api.
func rightsController(ctx context.Context, id *identity, live ...*appsv1.Deployment) (*Controller, *identity) {
	objs := []runtime.Object{service("api")}
	for _, d := range live {
		objs = append(objs, d)
	}
	c := New(Config{Client: fake.NewClientset(objs...), ClientFor: func(name string) kubernetes.Interface {
		if name == "team-a" {
			return id
		}
		return nil
	}})
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		panic("caches did not sync")
	}
	return c, id
}

// teamDeployment is Git's Deployment api as a commit holds it: not
// labelled with its sync yet.
func teamDeployment(annotations map[string]string) *appsv1.Deployment {
	d := gitDeployment("v1", annotations)
	delete(d.Labels, contract.LabelSync)
	return d
}
