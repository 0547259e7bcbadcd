package inventory

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
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

// WatchRequests calls notify each time contract.AnnotationRequestedAt or
// contract.AnnotationAcceptRewind of the sync's ConfigMap takes a new
// value (an accepted rewind is applied at once), until ctx ends. The
// values it finds first, the ConfigMap's creation by the first Save, and
// an annotation removed are not requests.
func (s *Store) WatchRequests(ctx context.Context, notify func()) {
	watchRequests(ctx, s.client, s.namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
	}, func(cm *corev1.ConfigMap) {
		if cm.Name == s.name {
			notify()
		}
	})
}

// WatchAllRequests is WatchRequests for every sync whose record is in
// namespace, with one watch: notify is given the name of the sync asked
// for.
func WatchAllRequests(ctx context.Context, client kubernetes.Interface, namespace string, notify func(syncName string)) {
	watchRequests(ctx, client, namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = LabelManagedBy + "=" + managedBy
	}, func(cm *corev1.ConfigMap) {
		if name, ok := strings.CutPrefix(cm.Name, contract.NamePrefix); ok {
			notify(name)
		}
	})
}

// watchRequests calls notify with each record of namespace, as tweak
// lists them, that is asked for a sync (see WatchRequests).
func watchRequests(ctx context.Context, client kubernetes.Interface, namespace string, tweak func(*metav1.ListOptions), notify func(*corev1.ConfigMap)) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(tweak))
	informer := factory.Core().V1().ConfigMaps().Informer()
	requested := func(obj any, key string) string {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			return cm.Annotations[key]
		}
		return ""
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			for _, key := range []string{contract.AnnotationRequestedAt, contract.AnnotationAcceptRewind} {
				if now := requested(obj, key); now != "" && now != requested(old, key) {
					notify(obj.(*corev1.ConfigMap))
					return
				}
			}
		},
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// AcceptRewind accepts the commit the sync holds as a rewind, by setting
// contract.AnnotationAcceptRewind to its full hash, and returns that
// hash. commit is the full hash or a prefix of at least 7 hex digits; it
// must name the commit the record holds (status Held, fetched commit),
// and the write holds only if the record is still the one read, so a
// person accepts what they saw and nothing pushed since.
func (s *Store) AcceptRewind(ctx context.Context, commit string) (string, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read sync record %s/%s: %w", s.namespace, s.name, err)
	}
	rec := decode(cm)
	held := rec.Status.FetchedCommit
	switch {
	case len(strings.TrimSpace(commit)) < MinAcceptDigits:
		return "", fmt.Errorf("commit %q: give at least %d hex digits of the held commit", commit, MinAcceptDigits)
	case rec.Status.State != contract.SyncHeld:
		return "", fmt.Errorf("sync %s holds no commit (status %q): %s", s.syncName, rec.Status.State, rec.Status.Message)
	case !Accepts(commit, held):
		return "", fmt.Errorf("sync %s holds commit %s, not %s: %s", s.syncName, held, commit, rec.Status.Message)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q,"annotations":{%q:%q}}}`, cm.ResourceVersion, contract.AnnotationAcceptRewind, held)
	_, err = s.client.CoreV1().ConfigMaps(s.namespace).Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: managedBy})
	if apierrors.IsConflict(err) {
		return "", fmt.Errorf("accept commit %s: the sync record %s/%s changed meanwhile; look at it again", held, s.namespace, s.name)
	}
	if err != nil {
		return "", fmt.Errorf("accept commit %s on %s/%s: %w", held, s.namespace, s.name, err)
	}
	return held, nil
}

// Accepts reports whether accept, a contract.AnnotationAcceptRewind
// value, names commit: its full hash, or a prefix of at least
// MinAcceptDigits hex digits, in either case.
func Accepts(accept, commit string) bool {
	accept = strings.ToLower(strings.TrimSpace(accept))
	return len(accept) >= MinAcceptDigits && strings.HasPrefix(commit, accept)
}
