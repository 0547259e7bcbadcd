package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Field managers of the rollout controller.
const (
	// FieldManager is the server-side apply field manager of the
	// Deployments the controller writes.
	FieldManager = "plimsoll-rollout"

	// passthroughWorkers is how many Deployments Passthrough applies at once.
	passthroughWorkers = 8
)

// DeploymentSink takes the Deployments of a synced commit that need a
// write: new, changed in Git, or drifted from it in the cluster. commit and
// subject name the commit they came from; each Deployment is as in Git,
// with its namespace and the plimsoll.dev/sync label set. The sync engine
// calls it after the commit's other objects are applied, and records the
// Deployments as applied only when it returns nil.
type DeploymentSink interface {
	SyncDeployments(ctx context.Context, commit, subject string, desired []*appsv1.Deployment) error
}

// Passthrough is a DeploymentSink that applies each Deployment as it is in
// Git with server-side apply, leaving the rollout to the native Deployment
// controller, with no plimsoll strategy, status or rollback.
type Passthrough struct {
	client kubernetes.Interface
}

// NewPassthrough returns a Passthrough that writes with client.
func NewPassthrough(client kubernetes.Interface) *Passthrough {
	return &Passthrough{client: client}
}

// SyncDeployments applies every Deployment, passthroughWorkers at a time,
// and reports every failure.
func (p *Passthrough) SyncDeployments(ctx context.Context, commit, _ string, desired []*appsv1.Deployment) error {
	errs := make([]error, len(desired))
	var g errgroup.Group
	g.SetLimit(passthroughWorkers)
	for i, d := range desired {
		g.Go(func() error {
			key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
			body, err := json.Marshal(d)
			if err != nil {
				errs[i] = fmt.Errorf("encode Deployment %s: %w", key, err)
				return nil
			}
			force := true
			_, err = p.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.ApplyPatchType, body,
				metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
			if err != nil {
				errs[i] = fmt.Errorf("apply Deployment %s of commit %.7s: %w", key, commit, err)
			}
			return nil
		})
	}
	_ = g.Wait() // every failure is in errs
	return errors.Join(errs...)
}
