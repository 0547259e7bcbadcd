package workload

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/inventory"
)

// Sync is a sync's status as its record holds it (the ConfigMap
// plimsoll-sync-<name>): what `plimsoll status` lists of it.
type Sync struct {
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Status        string `json:"status"`
	Commit        string `json:"commit"`
	FetchedCommit string `json:"fetchedCommit"`
	Message       string `json:"message"`
	StaleSince    string `json:"staleSince,omitempty"`
	// RecordDamage says why the record's inventory cannot be read (the
	// next sync rebuilds it), "" when it can.
	RecordDamage string `json:"recordDamage,omitempty"`
	// BlockedWriter is the note of a second daemon on this sync, which
	// writes nothing while another holds it.
	BlockedWriter string `json:"blockedWriter,omitempty"`
	// Objects is how many objects the record's inventory lists.
	Objects int `json:"-"`
	// Inventory is what the record's inventory lists; empty when it is
	// damaged (see RecordDamage).
	Inventory inventory.Inventory `json:"-"`
	// Templates are the template hashes of the Deployments of Commit,
	// by namespace/name (inventory.DataTemplates); nil when the record
	// has none.
	Templates map[string]string `json:"-"`
	// Owner is the replica (or the daemon) that writes for the sync: the
	// holder of its Lease plimsoll-<name> beside the record; "" when none
	// holds it, or the Leases could not be read (see FindOwners).
	Owner string `json:"owner,omitempty"`
}

// SyncOf reads the sync record cm. ok is false when cm is not a sync's
// record (its name is not plimsoll-sync- and its plimsoll.dev/sync label)
// or records no status yet: a sync applies its label to every object it
// applies, ConfigMaps included, and those are told apart by the name. It
// reads the annotations, counts the inventory and reads the template
// hashes; it never reads another key of the data.
func SyncOf(cm *corev1.ConfigMap) (Sync, bool) {
	name := cm.Labels[contract.LabelSync]
	a := cm.Annotations
	if name == "" || cm.Name != contract.NamePrefix+name || a[contract.AnnotationSyncStatus] == "" {
		return Sync{}, false
	}
	s := Sync{Name: name, Namespace: cm.Namespace, Status: a[contract.AnnotationSyncStatus], Commit: a[contract.AnnotationCommit],
		FetchedCommit: a[contract.AnnotationFetchedCommit], Message: a[contract.AnnotationMessage],
		StaleSince: a[contract.AnnotationStaleSince], BlockedWriter: a[contract.AnnotationBlockedWriter]}
	inv, err := inventory.ParseInventory(cm.Data[inventory.DataInventory])
	if err != nil {
		s.RecordDamage = fmt.Sprintf("the inventory of %s/%s does not parse: %v", cm.Namespace, cm.Name, err)
	}
	s.Objects, s.Inventory = len(inv), inv
	s.Templates = inventory.ParseTemplates(cm.Data[inventory.DataTemplates])
	return s, true
}

// FindSyncs reads the status of every sync whose record is in namespace
// ns (metav1.NamespaceAll: any), or only of sync name when it is set,
// sorted by namespace and name. It lists the ConfigMaps labelled
// plimsoll.dev/sync (see SyncOf).
func FindSyncs(ctx context.Context, client kubernetes.Interface, ns, name string) ([]Sync, error) {
	selector := contract.LabelSync
	if name != "" {
		selector += "=" + name
	}
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list the syncs' status ConfigMaps: %w", err)
	}
	var out []Sync
	for i := range list.Items {
		if s, ok := SyncOf(&list.Items[i]); ok {
			out = append(out, s)
		}
	}
	SortSyncs(out)
	return out, nil
}

// FindOwners sets the Owner of each of syncs, whose records are in
// namespace ns (metav1.NamespaceAll: any), from one list of the Leases
// there. A user who may not list Leases sees no owner, and no error: the
// owners are a courtesy of `plimsoll status`.
func FindOwners(ctx context.Context, client kubernetes.Interface, ns string, syncs []Sync) {
	list, err := client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	holders := map[string]string{}
	for _, l := range list.Items {
		if l.Spec.HolderIdentity != nil {
			holders[l.Namespace+"/"+l.Name] = *l.Spec.HolderIdentity
		}
	}
	for i := range syncs {
		syncs[i].Owner = holders[syncs[i].Namespace+"/"+contract.LeasePrefix+syncs[i].Name]
	}
}

// SortSyncs sorts syncs by namespace and name.
func SortSyncs(syncs []Sync) {
	slices.SortFunc(syncs, func(a, b Sync) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
