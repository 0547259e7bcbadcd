package inventory

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
)

// Request asks the syncing replica for a sync now, by setting
// contract.AnnotationRequestedAt to at. A sync that has no record yet is about to
// run its first sync anyway: nothing is written then.
func (s *Store) Request(ctx context.Context, at time.Time) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationRequestedAt, at.UTC().Format(time.RFC3339Nano))
	_, err := s.client.CoreV1().ConfigMaps(s.namespace).Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: managedBy})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("request a sync on %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}

// WatchRequests calls notify each time contract.AnnotationRequestedAt of the sync's
// ConfigMap takes a new value, until ctx ends. The value it finds first,
// and the ConfigMap's creation by the first Save, are not requests.
func (s *Store) WatchRequests(ctx context.Context, notify func()) {
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
		}))
	informer := factory.Core().V1().ConfigMaps().Informer()
	requested := func(obj any) string {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == s.name {
			return cm.Annotations[contract.AnnotationRequestedAt]
		}
		return ""
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			if now := requested(obj); now != "" && now != requested(old) {
				notify()
			}
		},
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}
