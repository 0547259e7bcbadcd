package rollout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// workloadKeys are the annotations the controller keeps alike on every
// Deployment of a progressive workload: the status, and the state that a
// restarted controller resumes from. Anything else on a Deployment is Git's
// or its own.
var workloadKeys = []string{
	contract.AnnotationPhase, contract.AnnotationRevision, contract.AnnotationTemplateHash,
	contract.AnnotationFailedHash, contract.AnnotationCommit, contract.AnnotationMessage,
	contract.AnnotationReplicas, contract.AnnotationStep, contract.AnnotationStepSince, contract.AnnotationScaleDownAt, contract.AnnotationPaused,
}

// workloadState is what the controller records on a progressive
// workload's Deployments besides the status.
type workloadState struct {
	Replicas    int32
	Step        int
	StepSince   time.Time
	ScaleDownAt time.Time
	Paused      bool
}

// readState reads the workload state from a Deployment's annotations. A
// value that does not parse reads as absent: the planner then starts that
// part afresh (a step from its beginning, a scale-down delay anew), which
// is safe.
func readState(a map[string]string) workloadState {
	s := workloadState{Paused: a[contract.AnnotationPaused] == "true"}
	if n, err := strconv.ParseInt(a[contract.AnnotationReplicas], 10, 32); err == nil && n >= 0 {
		s.Replicas = int32(n)
	}
	if n, err := strconv.Atoi(a[contract.AnnotationStep]); err == nil && n >= 1 {
		s.Step = n - 1
	}
	s.StepSince, _ = time.Parse(time.RFC3339, a[contract.AnnotationStepSince])
	s.ScaleDownAt, _ = time.Parse(time.RFC3339, a[contract.AnnotationScaleDownAt])
	return s
}

// annotations returns the workload annotations for status st and state s;
// empty values are left out (and so removed from the Deployments).
func (s workloadState) annotations(st strategies.Status) map[string]string {
	a := st.Annotations()
	a[contract.AnnotationReplicas] = strconv.Itoa(int(s.Replicas))
	if s.Step > 0 {
		a[contract.AnnotationStep] = strconv.Itoa(s.Step + 1)
	}
	if !s.StepSince.IsZero() {
		a[contract.AnnotationStepSince] = s.StepSince.UTC().Format(time.RFC3339)
	}
	if !s.ScaleDownAt.IsZero() {
		a[contract.AnnotationScaleDownAt] = s.ScaleDownAt.UTC().Format(time.RFC3339)
	}
	if s.Paused {
		a[contract.AnnotationPaused] = "true"
	}
	return a
}

// stamp replaces the workload annotations of d with a and sets its role. A
// command on d stays: only the reconcile that acts on it clears it.
func stamp(d *appsv1.Deployment, a map[string]string, role strategies.Role) {
	for _, k := range workloadKeys {
		delete(d.Annotations, k)
	}
	for k, v := range a {
		setAnnotation(&d.ObjectMeta, k, v)
	}
	if role != "" {
		setAnnotation(&d.ObjectMeta, contract.AnnotationRole, string(role))
	}
}

// command is a command found on a workload, with what it asks of the plan.
type command struct {
	name           string
	promote, abort bool
}

// readCommand reads the command on the workload's primary Deployment and
// applies pause, resume and retry to the state and status (they need no
// plan); promote and abort are for the planner.
func readCommand(primary *appsv1.Deployment, st *strategies.Status, s *workloadState) command {
	if primary == nil {
		return command{}
	}
	cmd := command{name: strings.TrimSpace(primary.Annotations[contract.AnnotationCommand])}
	switch cmd.name {
	case contract.CommandPause:
		s.Paused = true
	case contract.CommandResume:
		s.Paused = false
	case contract.CommandRetry:
		*st = strategies.Retry(*st)
	case contract.CommandPromote:
		cmd.promote = true
	case contract.CommandAbort:
		cmd.abort = true
	}
	return cmd
}

// describe says what a command did, for its Event: the planner's account
// for promote and abort, else a fixed one.
func (cmd command) describe(acted string) string {
	switch {
	case acted != "":
		return acted
	case cmd.name == contract.CommandPause:
		return "paused"
	case cmd.name == contract.CommandResume:
		return "resumed"
	case cmd.name == contract.CommandRetry:
		return "cleared the failed template; the Git template goes out again"
	case cmd.promote:
		return "nothing to promote"
	case cmd.abort:
		return "nothing to abort"
	}
	return fmt.Sprintf("ignored unknown command %q (want promote, abort, retry, pause or resume)", cmd.name)
}

// getDeployment reads a Deployment from the API server; nil when it does not
// exist. The progressive strategies read live objects rather than the
// informers' caches: a Service swap or a scale-down must not be decided on a
// stale view.
func (c *Controller) getDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	d, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Deployment %s/%s: %w", ns, name, err)
	}
	return d, nil
}

// writeDeployment creates want when live is nil, else updates live to want
// when their labels, annotations or spec differ; an unchanged Deployment is
// not written.
func (c *Controller) writeDeployment(ctx context.Context, live, want *appsv1.Deployment) error {
	if live == nil {
		if _, err := c.client.AppsV1().Deployments(want.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create Deployment %s: %w", want.Name, err)
		}
		return nil
	}
	if maps.Equal(live.Labels, want.Labels) && maps.Equal(live.Annotations, want.Annotations) && reflect.DeepEqual(live.Spec, want.Spec) {
		return nil
	}
	if _, err := c.client.AppsV1().Deployments(want.Namespace).Update(ctx, want, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("update Deployment %s: %w", want.Name, err)
	}
	return nil
}

// clearCommand removes command cmd from Deployment d, unless the
// annotation has changed since: a newer command is not the one acted on.
func (c *Controller) clearCommand(ctx context.Context, d *appsv1.Deployment, cmd string) error {
	path := "/metadata/annotations/" + strings.ReplaceAll(contract.AnnotationCommand, "/", "~1")
	patch := fmt.Appendf(nil, `[{"op":"test","path":%q,"value":%q},{"op":"remove","path":%q}]`, path, cmd, path)
	_, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		// Cleared, gone, or the command is no longer cmd (the API server
		// answers a failed test with 422 Invalid).
		return nil
	}
	return fmt.Errorf("clear %s=%s on Deployment %s: %w", contract.AnnotationCommand, cmd, d.Name, err)
}

// derived returns the Deployment name of workload git, as Git describes it
// but for its name, its selector and template labels (extra added to both)
// and its template, which is tmpl labelled with the workload and stamped.
// replicas is the count to create it with. Git's labels and annotations
// are set on it; the workload annotations are left for stamp.
func derived(git *appsv1.Deployment, name string, extra map[string]string, tmpl corev1.PodTemplateSpec, replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   git.Namespace,
			Labels:      maps.Clone(git.Labels),
			Annotations: maps.Clone(git.Annotations),
		},
		Spec: *git.Spec.DeepCopy(),
	}
	setLabel(&d.ObjectMeta, contract.LabelWorkload, git.Name)
	d.Spec.Replicas = &replicas
	sel := metav1.LabelSelector{MatchLabels: map[string]string{}}
	if git.Spec.Selector != nil {
		sel = *git.Spec.Selector.DeepCopy()
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
	}
	maps.Copy(sel.MatchLabels, extra)
	d.Spec.Selector = &sel
	t := *tmpl.DeepCopy()
	for k, v := range extra {
		setLabel(&t.ObjectMeta, k, v)
	}
	d.Spec.Template = workloadTemplate(t, git.Name)
	return d
}

// refresh returns live with Git's labels, annotations and spec fields
// written over it, keeping live's name, selector, replicas and template:
// what a commit changes on a Deployment that does not take its template.
func refresh(live, git *appsv1.Deployment) *appsv1.Deployment {
	d := live.DeepCopy()
	maps.Copy(d.Labels, git.Labels)
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	maps.Copy(d.Annotations, git.Annotations)
	spec := git.Spec.DeepCopy()
	spec.Replicas, spec.Selector, spec.Template = d.Spec.Replicas, d.Spec.Selector, d.Spec.Template
	spec.Paused = d.Spec.Paused
	d.Spec = *spec
	return d
}

// desiredReplicas is spec.replicas in Git, 1 when unset.
func desiredReplicas(git *appsv1.Deployment) int32 {
	if git.Spec.Replicas == nil {
		return 1
	}
	return *git.Spec.Replicas
}

// servedBy reports whether the Service's EndpointSlices hold a ready
// endpoint of a pod of Deployment deploy (see strategies.PodOf). Pods still served are
// not taken away: the Service's endpoints follow a selector change a
// moment later.
func (c *Controller) servedBy(ctx context.Context, ns, service, deploy string) (bool, error) {
	pods, err := readyPods(ctx, c.client, ns, service)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(pods, func(pod string) bool { return strategies.PodOf(pod, deploy) }), nil
}

// readyPods lists the pods the Service's EndpointSlices hold as ready (an
// endpoint without a ready condition counts as ready), sorted.
func readyPods(ctx context.Context, client kubernetes.Interface, ns, service string) ([]string, error) {
	list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{discoveryv1.LabelServiceName: service}.String(),
	})
	if err != nil {
		return nil, fmt.Errorf("read the endpoints of Service %s: %w", service, err)
	}
	items := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
	}
	return strategies.ReadyPods(items), nil
}

// getService reads the Service named by annotation key of a workload: a
// missing name or Service is an error that names both, for the workload's
// message and the sync status.
func (c *Controller) getService(ctx context.Context, ns string, annotations map[string]string, key string) (*corev1.Service, error) {
	name := annotations[key]
	if name == "" {
		return nil, &inputError{fmt.Sprintf("annotation %s: a Service name is required for strategy %q", key, annotations[contract.AnnotationStrategy])}
	}
	svc, err := c.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &inputError{fmt.Sprintf("annotation %s: Service %q does not exist in namespace %s", key, name, ns)}
	}
	if err != nil {
		return nil, fmt.Errorf("read Service %s: %w", name, err)
	}
	return svc, nil
}

// patchSelector sets key=value in the selector of Service svc with a merge
// patch, one write that the endpoints follow at once.
func (c *Controller) patchSelector(ctx context.Context, svc *corev1.Service, key, value string) error {
	if svc.Spec.Selector[key] == value {
		return nil
	}
	patch := fmt.Appendf(nil, `{"spec":{"selector":{%q:%q}}}`, key, value)
	if _, err := c.client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, "application/merge-patch+json", patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("set %s=%s in the selector of Service %s: %w", key, value, svc.Name, err)
	}
	return nil
}

// inputError is a workload's configuration that cannot be rolled out as it
// is (a missing Service, a bad steps string): the workload is marked
// Degraded with it and nothing else changes until Git does.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// markInvalid records err as the message of every given Deployment, phase
// Degraded, with the plimsoll.dev/ annotations of Git (git; nil keeps the
// live ones), which name what is wrong, so that the reconcile loop meets
// the same error and leaves the workload as it is until Git changes. The
// strategy is not copied: a workload keeps being reconciled by the
// strategy it runs with. Nothing else changes: the pods run on as they are.
func (c *Controller) markInvalid(ctx context.Context, err error, git map[string]string, deploys ...*appsv1.Deployment) error {
	for _, live := range deploys {
		if live == nil {
			continue
		}
		want := live.DeepCopy()
		for k, v := range git {
			if strings.HasPrefix(k, contract.Prefix) && !slices.Contains(workloadKeys, k) && k != contract.AnnotationStrategy {
				setAnnotation(&want.ObjectMeta, k, v)
			}
		}
		setAnnotation(&want.ObjectMeta, contract.AnnotationPhase, string(strategies.PhaseDegraded))
		setAnnotation(&want.ObjectMeta, contract.AnnotationMessage, err.Error())
		if werr := c.writeDeployment(ctx, live, want); werr != nil {
			return werr
		}
	}
	return nil
}

// invalid handles an error met while reading a workload: an input error is
// recorded on its Deployments (see markInvalid). It returns err, joined
// with a failure to record it.
func (c *Controller) invalid(ctx context.Context, err error, git map[string]string, deploys ...*appsv1.Deployment) error {
	if !isInputError(err) {
		return err
	}
	if werr := c.markInvalid(ctx, err, git, deploys...); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// isInputError reports whether err is, or wraps, an inputError.
func isInputError(err error) bool {
	var ie *inputError
	return errors.As(err, &ie)
}

// settleInvalid ends a reconcile that met err: an input error, already
// recorded on the workload, waits for Git to change (no retry); any other
// error is retried.
func (c *Controller) settleInvalid(ns, name string, err error) error {
	if isInputError(err) {
		c.log.Info("workload cannot be rolled out as written", "workload", ns+"/"+name, "err", err)
		return nil
	}
	return err
}

// checkAnnotations checks the input annotations of a workload in Git: the
// strategy is known, the strategy's Service names are set, and every value
// parses. The first problem is returned as an inputError naming the
// annotation.
func checkAnnotations(a map[string]string) error {
	for _, key := range []string{contract.AnnotationAutoRollback, contract.AnnotationAutoPromote} {
		if v, ok := a[key]; ok && v != "true" && v != "false" {
			return &inputError{fmt.Sprintf("annotation %s: %q is neither \"true\" nor \"false\"", key, v)}
		}
	}
	switch strategy := a[contract.AnnotationStrategy]; strategy {
	case "", contract.StrategyRolling:
		return nil
	case contract.StrategyBlueGreen:
		if a[contract.AnnotationActiveService] == "" {
			return &inputError{fmt.Sprintf("annotation %s: a Service name is required for strategy %q", contract.AnnotationActiveService, strategy)}
		}
		_, err := scaleDownDelay(a)
		return err
	case contract.StrategyCanary:
		if a[contract.AnnotationService] == "" {
			return &inputError{fmt.Sprintf("annotation %s: a Service name is required for strategy %q", contract.AnnotationService, strategy)}
		}
		_, err := canarySteps(a)
		return err
	default:
		return &inputError{fmt.Sprintf("annotation %s: unknown strategy %q (want %s, %s or %s)",
			contract.AnnotationStrategy, strategy, contract.StrategyRolling, contract.StrategyBlueGreen, contract.StrategyCanary)}
	}
}

// workloadDeployments names the Deployments a progressive workload runs
// as: the colors for blue-green, <name> and <name>-canary for canary.
func workloadDeployments(git *appsv1.Deployment) []string {
	if git.Annotations[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
		return []string{git.Name + "-blue", git.Name + "-green"}
	}
	return []string{git.Name, git.Name + "-canary"}
}
