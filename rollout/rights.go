package rollout

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	workloads "plimsoll.dev/plimsoll/workload"
)

// A sync that writes as its own identity (Config.ClientFor) has every
// write the controller makes for its workloads made as that identity,
// but for the status (see patchDeployment): the rights below. A commit
// whose identity lacks one of them would be applied, and its rollout
// refused at the first write that needs it, with the rest of the commit
// in place; so the check of a commit (checkDeployment) asks the API server, before anything of
// the commit is applied, whether the identity may make each of them, and
// refuses the commit naming the first it may not. docs/syncs.md lists
// them as a Role to copy; Kubernetes' admin and edit roles grant them
// all.

// A right is one kind of write the controller makes for a workload: verb
// on resource (of group) in the workload's namespace, and what it is for.
type right struct {
	verb, group, resource, what string
}

// Every strategy's Deployment is written (its template, its count, the
// commands) and its newest ReplicaSet carries its status (see
// mirror); a new Deployment of Git's name is created. The sync's
// dry-run of a Deployment that changed is an update: asked here too, so
// that a right the dry-run of a new Deployment (a create) does not meet
// is not first missed at the next commit.
var rollingRights = []right{
	{"create", "apps", "deployments", "to create the Deployment"},
	{"update", "apps", "deployments", "for the sync's dry-run of a changed Deployment"},
	{"patch", "apps", "deployments", "to write the Deployment's template and count"},
	{"patch", "apps", "replicasets", "to copy the rollout's status onto its ReplicaSet"},
}

// A canary creates and deletes <name>-canary, labels its pods into the
// Service and steers the Service's selector by that label, and hands the
// canary's ReplicaSet and pods over to the stable at the end.
var canaryRights = append(slices.Clone(rollingRights),
	right{"delete", "apps", "deployments", "to remove the canary Deployment once its revision is promoted or aborted"},
	right{"delete", "apps", "replicasets", "to hand the canary's pods over to the stable"},
	right{"patch", "", "pods", "to label the canary's pods into the Service"},
	right{"delete", "", "pods", "to hand the canary's pods over to the stable"},
	right{"patch", "", "services", "to select the serving pods in the Service"},
)

// A blue-green workload creates its colors, swaps the Services' selectors
// between them, and deletes them when it leaves the strategy.
var blueGreenRights = append(slices.Clone(rollingRights),
	right{"delete", "apps", "deployments", "to remove the colors when the workload leaves blue-green"},
	right{"patch", "", "services", "to swap the Services' selectors between the colors"},
)

// autoscaledRights are a blue-green workload's whose HPA the swap points
// at the new active color.
var autoscaledRights = []right{
	{"patch", "autoscaling", "horizontalpodautoscalers", "to point the HorizontalPodAutoscaler at the active color"},
}

// rightsOf lists the rights the controller needs for workload git, of
// strategy Git's, and of the strategies its live Deployments run (a
// strategy switch retires what the old one runs): each once.
func rightsOf(git *appsv1.Deployment, live []string, autoscaled bool) []right {
	var out []right
	for _, strategy := range append([]string{git.Annotations[contract.AnnotationStrategy]}, live...) {
		switch strategy {
		case contract.StrategyCanary:
			out = append(out, canaryRights...)
		case contract.StrategyBlueGreen:
			out = append(out, blueGreenRights...)
			if autoscaled {
				out = append(out, autoscaledRights...)
			}
		default:
			out = append(out, rollingRights...)
		}
	}
	var unique []right
	for _, r := range out {
		if !slices.ContainsFunc(unique, func(u right) bool { return u.verb == r.verb && u.group == r.group && u.resource == r.resource }) {
			unique = append(unique, r)
		}
	}
	return unique
}

// rightsTTL is how long an answer that a right is granted is trusted: a
// commit of 100 Deployments in one namespace asks for each right once,
// not 100 times. A right taken away within it is found at the write that
// needs it, which the workload's status and a Warning Event then report
// (see reportRefusal). A refusal is never kept: the next commit asks
// again.
const rightsTTL = 30 * time.Second

// grants remembers, per sync, namespace and right, until when the API
// server said the sync's identity has it.
type grants struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// checkRights refuses workload git, of sync name that writes as its own
// identity, when that identity may not make one of the writes its
// rollout needs; nil for a sync written with the controller's own rights.
// It asks the API server with a SelfSubjectAccessReview made as the
// identity, which needs no right of the daemon's.
func (c *Controller) checkRights(ctx context.Context, name string, git *appsv1.Deployment) error {
	if c.clientFor == nil {
		return nil
	}
	client := c.clientFor(name)
	if client == nil {
		return nil
	}
	var live []string
	if v, ok := c.viewOf(git.Namespace); ok {
		for _, d := range indexed[*appsv1.Deployment](v.index.deploys, byWorkload, git.Namespace+"/"+git.Name) {
			live = append(live, d.Annotations[contract.AnnotationStrategy])
		}
	}
	scaler, _ := c.autoscalerOf(git.Namespace, workloadNames(git.Name)...)
	now := c.clock.Now()
	for _, r := range rightsOf(git, live, scaler != nil) {
		key := name + "/" + git.Namespace + "/" + r.verb + "/" + r.group + "/" + r.resource
		if c.grants.trusted(key, now) {
			continue
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: git.Namespace, Verb: r.verb, Group: r.group, Resource: r.resource},
		}}
		out, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("ask whether sync %s may %s %s: %w", name, r.verb, resourceName(r), err)
		}
		if !out.Status.Allowed {
			return &RightError{Sync: name, Namespace: git.Namespace, Verb: r.verb, Resource: resourceName(r), What: r.what,
				Strategy: workloads.NamedStrategy(git.Annotations)}
		}
		c.grants.trust(key, now.Add(rightsTTL))
	}
	return nil
}

// trusted reports whether key was granted until after now.
func (g *grants) trusted(key string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return now.Before(g.until[key])
}

// trust records that key is granted until then.
func (g *grants) trust(key string, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.until == nil {
		g.until = map[string]time.Time{}
	}
	g.until[key] = until
}

// resourceName is r's resource as RBAC and kubectl spell it:
// "deployments.apps", "pods".
func resourceName(r right) string {
	if r.group == "" {
		return r.resource
	}
	return r.resource + "." + r.group
}

// RightError refuses a workload whose sync's identity may not make a
// write its rollout needs.
type RightError struct {
	// Sync is the sync, Namespace the workload's namespace, Strategy its
	// strategy in Git.
	Sync, Namespace, Strategy string
	// Verb and Resource are the write refused ("patch", "pods"), What
	// what the controller makes it for.
	Verb, Resource, What string
}

// Error reads `the identity of sync team-a may not patch pods in
// namespace team-a, which the canary strategy needs (to label the
// canary's pods into the Service); Kubernetes' edit role grants it, and
// docs/syncs.md lists a Role with each strategy's rights`.
func (e *RightError) Error() string {
	return fmt.Sprintf("the identity of sync %s may not %s %s in namespace %s, which the %s strategy needs (%s); "+
		"Kubernetes' edit role grants it, and docs/syncs.md lists a Role with each strategy's rights",
		e.Sync, e.Verb, e.Resource, e.Namespace, e.Strategy, e.What)
}
