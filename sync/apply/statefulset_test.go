package apply

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChangedFixedField names the fixed field of a StatefulSet a change
// touches, down to the leaf, against a live object holding the server's
// defaults.
func TestChangedFixedField(t *testing.T) {
	const live = `kind: StatefulSet
spec:
  serviceName: db
  podManagementPolicy: OrderedReady
  replicas: 3
  selector: {matchLabels: {app: db}}
  volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
      volumeMode: Filesystem
    status: {phase: Pending}
`
	const claim = "  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: %s}}\n"
	for _, c := range []struct{ name, want, path string }{
		{"unchanged, defaults left out", "spec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n" + fmt.Sprintf(claim, "1Gi"), ""},
		{"a mutable field", "spec:\n  replicas: 5\n  serviceName: db\n", ""},
		{"the claims' size", "spec:\n  serviceName: db\n" + fmt.Sprintf(claim, "2Gi"), "spec.volumeClaimTemplates[0].spec.resources.requests.storage"},
		{"the service name", "spec:\n  serviceName: db-headless\n", "spec.serviceName"},
		{"the pod management policy", "spec:\n  podManagementPolicy: Parallel\n", "spec.podManagementPolicy"},
		{"the selector", "spec:\n  selector: {matchLabels: {app: db, tier: data}}\n", "spec.selector.matchLabels.tier"},
		{"a second claim", "spec:\n" + fmt.Sprintf(claim, "1Gi") + "  - metadata: {name: logs}\n", "spec.volumeClaimTemplates"},
	} {
		got := changedFixedField(&unstructured.Unstructured{Object: decode(t, live)}, &unstructured.Unstructured{Object: decode(t, "kind: StatefulSet\n"+c.want)})
		if got != c.path {
			t.Errorf("%s: changedFixedField = %q, want %q", c.name, got, c.path)
		}
	}
}
