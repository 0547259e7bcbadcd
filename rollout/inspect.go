package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// Workload is a workload as the annotations of its Deployments describe
// it: what `plimsoll status` lists and the CLI's commands act on.
type Workload struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Strategy is rolling, blue-green or canary, as the Deployments run.
	Strategy string `json:"strategy"`
	// Primary is the Deployment that carries the status and takes
	// commands: <name> for rolling and canary, the active color for
	// blue-green.
	Primary  string `json:"primary"`
	Phase    string `json:"phase"`
	Revision int64  `json:"revision"`
	Commit   string `json:"commit"`
	Message  string `json:"message"`
	// FailedHash is plimsoll.dev/failed-hash, "" when none.
	FailedHash string `json:"failedHash,omitempty"`
	// Deployments are the names of the workload's Deployments, sorted.
	Deployments []string `json:"deployments"`
}

// ErrWorkloadNotFound is returned for a workload no Deployment belongs to.
var ErrWorkloadNotFound = errors.New("workload not found")

// ListWorkloads reads the workloads of namespace ns ("" for every
// namespace) from the Deployments labelled plimsoll.dev/workload, sorted by
// namespace and name.
func ListWorkloads(ctx context.Context, client kubernetes.Interface, ns string) ([]Workload, error) {
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelWorkload})
	if err != nil {
		return nil, fmt.Errorf("list the workloads' Deployments: %w", err)
	}
	groups := map[[2]string][]*appsv1.Deployment{}
	for i := range list.Items {
		d := &list.Items[i]
		key := [2]string{d.Namespace, d.Labels[contract.LabelWorkload]}
		groups[key] = append(groups[key], d)
	}
	var out []Workload
	for key, deploys := range groups {
		w, ok := describeWorkload(key[0], key[1], deploys)
		if ok {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// GetWorkload reads workload name of namespace ns; ErrWorkloadNotFound
// when it has no Deployment.
func GetWorkload(ctx context.Context, client kubernetes.Interface, ns, name string) (Workload, error) {
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelWorkload + "=" + name})
	if err != nil {
		return Workload{}, fmt.Errorf("list the Deployments of workload %s: %w", name, err)
	}
	deploys := make([]*appsv1.Deployment, 0, len(list.Items))
	for i := range list.Items {
		deploys = append(deploys, &list.Items[i])
	}
	w, ok := describeWorkload(ns, name, deploys)
	if !ok {
		return Workload{}, fmt.Errorf("%w: no Deployment of workload %q in namespace %s", ErrWorkloadNotFound, name, ns)
	}
	return w, nil
}

// describeWorkload makes a Workload of the Deployments of one workload:
// the primary is, in this order, a rolling Deployment marked primary, the
// canary's stable Deployment, the blue-green color with role active, or
// the Deployment with the highest revision. ok is false without
// Deployments.
func describeWorkload(ns, name string, deploys []*appsv1.Deployment) (Workload, bool) {
	if len(deploys) == 0 {
		return Workload{}, false
	}
	w := Workload{Namespace: ns, Name: name, Strategy: contract.StrategyRolling}
	var primary *appsv1.Deployment
	best := int64(-1)
	rank := func(d *appsv1.Deployment) int {
		switch strategies.Role(d.Annotations[contract.AnnotationRole]) {
		case strategies.RolePrimary:
			return 3
		case strategies.RoleStable, strategies.RoleActive:
			return 2
		}
		return 1
	}
	for _, d := range deploys {
		w.Deployments = append(w.Deployments, d.Name)
		st, _ := strategies.ReadStatus(d.Annotations)
		if primary == nil || rank(d) > rank(primary) || (rank(d) == rank(primary) && st.Revision > best) {
			primary, best = d, st.Revision
		}
	}
	slices.Sort(w.Deployments)
	switch strategies.Role(primary.Annotations[contract.AnnotationRole]) {
	case strategies.RoleStable:
		w.Strategy = contract.StrategyCanary
	case strategies.RoleActive, strategies.RolePreview, strategies.RoleIdle:
		if primary.Labels[contract.LabelColor] != "" || primary.Spec.Template.Labels[contract.LabelColor] != "" {
			w.Strategy = contract.StrategyBlueGreen
		}
	}
	st, _ := strategies.ReadStatus(primary.Annotations)
	w.Primary, w.Phase, w.Revision, w.Commit, w.Message, w.FailedHash =
		primary.Name, string(st.Phase), st.Revision, st.Commit, st.Message, st.FailedHash
	return w, true
}

// commandTimeout is how long SendCommand waits for the controller, and
// eventGrace how long, once the command is cleared, for its Event.
const (
	commandTimeout = 30 * time.Second
	eventGrace     = 5 * time.Second
)

// SendCommand sets plimsoll.dev/command on the primary Deployment of
// workload name, waits until the controller clears it, and returns what
// the controller said it did (the message of its Command Event). A command
// that cannot apply to the workload is refused without being set: promote
// and abort on a rolling workload, promote or abort with nothing going out,
// retry without a failed revision, resume of a workload not paused.
func SendCommand(ctx context.Context, client kubernetes.Interface, ns, name, cmd string) (string, error) {
	w, err := GetWorkload(ctx, client, ns, name)
	if err != nil {
		return "", err
	}
	if err := applies(w, cmd); err != nil {
		return "", err
	}
	sent := time.Now().Add(-time.Second)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationCommand, cmd)
	if _, err := client.AppsV1().Deployments(ns).Patch(ctx, w.Primary, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("set %s=%s on Deployment %s: %w", contract.AnnotationCommand, cmd, w.Primary, err)
	}
	var said string
	var cleared time.Time
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, commandTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, w.Primary, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if _, pending := d.Annotations[contract.AnnotationCommand]; pending {
			return false, nil
		}
		if cleared.IsZero() {
			cleared = time.Now()
		}
		said = commandEvent(ctx, client, ns, w.Primary, cmd, sent)
		// Events are sent asynchronously (and may be dropped by the
		// recorder's rate limit): after a while, say what the status says.
		return said != "" || time.Since(cleared) > eventGrace, nil
	})
	if err != nil {
		return "", fmt.Errorf("the controller did not act on %s within %s (is the daemon running?); the command stays on Deployment %s", cmd, commandTimeout, w.Primary)
	}
	if said == "" {
		now, err := GetWorkload(ctx, client, ns, name)
		if err != nil {
			return "", err
		}
		said = fmt.Sprintf("%s: done; %s is %s: %s", cmd, name, now.Phase, now.Message)
	}
	return said, nil
}

// applies refuses a command that cannot apply to w as it is.
func applies(w Workload, cmd string) error {
	progressive := w.Strategy != contract.StrategyRolling
	switch cmd {
	case contract.CommandPromote, contract.CommandAbort:
		if !progressive {
			return fmt.Errorf("%s applies to blue-green and canary workloads; %s is %s", cmd, w.Name, w.Strategy)
		}
		if w.Phase == string(strategies.PhaseHealthy) || w.Phase == string(strategies.PhaseDegraded) {
			return fmt.Errorf("nothing to %s: %s is %s at revision %d", cmd, w.Name, w.Phase, w.Revision)
		}
	case contract.CommandRetry:
		if w.FailedHash == "" {
			return fmt.Errorf("nothing to retry: %s has no failed revision", w.Name)
		}
	case contract.CommandResume:
		if w.Phase != string(strategies.PhasePaused) {
			return fmt.Errorf("nothing to resume: %s is %s, not Paused", w.Name, w.Phase)
		}
	case contract.CommandPause:
	default:
		return fmt.Errorf("unknown command %q (want promote, abort, retry, pause or resume)", cmd)
	}
	return nil
}

// commandEvent returns the message of the newest Command Event about
// Deployment name for cmd since since, "" when there is none yet.
func commandEvent(ctx context.Context, client kubernetes.Interface, ns, name, cmd string, since time.Time) string {
	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Deployment", "involvedObject.name": name, "reason": ReasonCommand}.String()})
	if err != nil {
		return ""
	}
	var newest *corev1.Event
	for i := range list.Items {
		e := &list.Items[i]
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.Before(since.Truncate(time.Second)) || len(e.Message) < len(cmd) || e.Message[:len(cmd)] != cmd {
			continue
		}
		if newest == nil || at.After(newest.LastTimestamp.Time) {
			newest = e
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Message
}

// Trace is what `plimsoll trace` shows of a workload at one moment.
type Trace struct {
	Workload    Workload          `json:"workload"`
	Deployments []TraceDeployment `json:"deployments"`
	Pods        []TracePod        `json:"pods"`
	Services    []TraceService    `json:"services"`
}

// TraceDeployment is one Deployment of a workload with its ReplicaSets.
type TraceDeployment struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Desired   int32  `json:"desired"`
	Ready     int32  `json:"ready"`
	Updated   int32  `json:"updated"`
	Available int32  `json:"available"`
	// ReplicaSets are those with pods or asking for some.
	ReplicaSets []TraceReplicaSet `json:"replicaSets"`
}

// TraceReplicaSet is one ReplicaSet of a Deployment.
type TraceReplicaSet struct {
	Name    string `json:"name"`
	Image   string `json:"image"`
	Desired int32  `json:"desired"`
	Ready   int32  `json:"ready"`
}

// TracePod is one pod of a workload.
type TracePod struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Ready bool   `json:"ready"`
	// Serving is the canary's plimsoll.dev/serving label.
	Serving  bool `json:"serving"`
	Deleting bool `json:"deleting"`
}

// TraceService is a Service the workload's strategy steers, with the pods
// its EndpointSlices list as ready.
type TraceService struct {
	Name      string   `json:"name"`
	Selector  string   `json:"selector"`
	ReadyPods []string `json:"readyPods"`
}

// TraceWorkload reads workload name of namespace ns as `plimsoll trace`
// shows it: its Deployments, their ReplicaSets, its pods, and the Services
// its annotations name.
func TraceWorkload(ctx context.Context, client kubernetes.Interface, ns, name string) (Trace, error) {
	w, err := GetWorkload(ctx, client, ns, name)
	if err != nil {
		return Trace{}, err
	}
	tr := Trace{Workload: w}
	selector := metav1.ListOptions{LabelSelector: contract.LabelWorkload + "=" + name}
	deploys, err := client.AppsV1().Deployments(ns).List(ctx, selector)
	if err != nil {
		return Trace{}, fmt.Errorf("list the Deployments of %s: %w", name, err)
	}
	rsets, err := client.AppsV1().ReplicaSets(ns).List(ctx, selector)
	if err != nil {
		return Trace{}, fmt.Errorf("list the ReplicaSets of %s: %w", name, err)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, selector)
	if err != nil {
		return Trace{}, fmt.Errorf("list the pods of %s: %w", name, err)
	}
	services := map[string]bool{}
	for _, d := range deploys.Items {
		td := TraceDeployment{Name: d.Name, Role: d.Annotations[contract.AnnotationRole], Desired: ptrValue(d.Spec.Replicas),
			Ready: d.Status.ReadyReplicas, Updated: d.Status.UpdatedReplicas, Available: d.Status.AvailableReplicas}
		for _, rs := range rsets.Items {
			owner := metav1.GetControllerOf(&rs)
			if owner == nil || owner.UID != d.UID || (ptrValue(rs.Spec.Replicas) == 0 && rs.Status.Replicas == 0) {
				continue
			}
			td.ReplicaSets = append(td.ReplicaSets, TraceReplicaSet{Name: rs.Name, Image: firstImage(rs.Spec.Template.Spec),
				Desired: ptrValue(rs.Spec.Replicas), Ready: rs.Status.ReadyReplicas})
		}
		slices.SortFunc(td.ReplicaSets, func(a, b TraceReplicaSet) int { return cmp.Compare(a.Name, b.Name) })
		tr.Deployments = append(tr.Deployments, td)
		for _, key := range []string{contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService} {
			if svc := d.Annotations[key]; svc != "" {
				services[svc] = true
			}
		}
	}
	slices.SortFunc(tr.Deployments, func(a, b TraceDeployment) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range pods.Items {
		ready, _ := readiness(&p)
		tr.Pods = append(tr.Pods, TracePod{Name: p.Name, Image: firstImage(p.Spec), Ready: ready,
			Serving: p.Labels[contract.LabelServing] == "true", Deleting: p.DeletionTimestamp != nil})
	}
	slices.SortFunc(tr.Pods, func(a, b TracePod) int { return cmp.Compare(a.Name, b.Name) })
	for _, svc := range slices.Sorted(maps.Keys(services)) {
		ts, err := traceService(ctx, client, ns, svc)
		if err != nil {
			return Trace{}, err
		}
		tr.Services = append(tr.Services, ts)
	}
	return tr, nil
}

// traceService reads Service name's selector and ready endpoints; a
// missing Service shows as such.
func traceService(ctx context.Context, client kubernetes.Interface, ns, name string) (TraceService, error) {
	ts := TraceService{Name: name}
	svc, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if isNotFound(err) {
		ts.Selector = "(no such Service)"
		return ts, nil
	}
	if err != nil {
		return ts, fmt.Errorf("read Service %s: %w", name, err)
	}
	ts.Selector = labels.Set(svc.Spec.Selector).String()
	ts.ReadyPods, err = readyPods(ctx, client, ns, name)
	return ts, err
}

// Done reports whether the rollout has ended: Healthy or Degraded.
func (t Trace) Done() bool {
	p := strategies.Phase(t.Workload.Phase)
	return p == strategies.PhaseHealthy || p == strategies.PhaseDegraded
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// firstImage is the image of the first container of spec.
func firstImage(spec corev1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	return spec.Containers[0].Image
}
