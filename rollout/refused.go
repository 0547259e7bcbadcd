package rollout

import (
	"context"
	"errors"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/strategies"
	workloads "plimsoll.dev/plimsoll/workload"
)

// refusalsReported is how many times in a row a workload's writes are
// refused before the refusal is reported (see reportRefusal). The retries
// back off from 5 ms, doubling: the tenth comes some 5 s after the first.
// An API server that has just started answers 403 for a moment, before
// its RBAC caches are filled, and a webhook being rolled out refuses
// for as long as its pods take; neither is worth a Warning. A refusal
// that lasts is retried every 10 s (retryMax), each retry one refused
// request and a repeat of the Event, which raises its count.
const refusalsReported = 10

// refusedPrefix starts the message of a workload whose write was
// refused.
const refusedPrefix = "write refused, retrying: "

// refused reports whether err is the API server's refusal of a write, one
// that the same request made again meets again until a person changes
// something: RBAC or an admission webhook says no (403), or the object
// is not admitted as written (422). A conflict, a timeout or an outage is
// not: it goes by itself.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
}

// reportRefusal makes a write the API server refused for workload key
// seen: the message of the Deployment that serves it (of Git's name when
// none serves yet) names the write and the API server's reason, a
// Warning Event says the same, plimsoll_rollout_write_refusals_total
// counts it, and the log says it at the level of a warning. The phase is
// left as it is: the revision did not fail, and a rollback would need the
// very writes that are refused. The reconcile goes on being retried, so a
// right granted since takes effect by itself; each retry refused writes
// the same message again, which is no write at all. The
// message and the Event go out with the controller's own rights, which
// the sync's identity may lack.
func (c *Controller) reportRefusal(ctx context.Context, key string, err error) {
	msg := refusedPrefix + oneLine(err)
	c.log.Warn("write refused", "workload", key, "err", err)
	c.metrics.refused(key)
	ns, name, splitErr := cache.SplitMetaNamespaceKey(key)
	if splitErr != nil {
		return
	}
	w := c.observe(ns, name, nil)
	d, _ := workloads.Serving(name, func(n string) (*appsv1.Deployment, error) { return w.deploys[n], nil })
	if d == nil {
		d = w.deploys[name]
	}
	if d == nil {
		// Nothing runs yet (the create of Git's Deployment was refused):
		// the Event goes on Git's Deployment, where kubectl get events
		// lists it now and kubectl describe finds it once it exists.
		if in, ok := c.intents.get(key); ok && in.git != nil {
			c.eventFor(ctx, in.git, corev1.EventTypeWarning, ReasonWriteRefused, msg)
		}
		return
	}
	if werr := c.execute(ctx, &execution{w: w}, strategies.PlanMessage(strings.TrimPrefix(d.Name, name), msg)); werr != nil {
		c.log.Warn("record a refused write", "workload", key, "err", errors.Join(err, werr))
	}
	c.eventFor(ctx, d, corev1.EventTypeWarning, ReasonWriteRefused, msg)
}

// oneLine is err's text on one line, for an annotation.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
