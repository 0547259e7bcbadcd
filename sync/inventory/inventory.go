// Package inventory keeps the record of one sync in a ConfigMap: the objects
// it applied (which prune uses) in the data, and the sync status in
// annotations (docs/reference.md). The record is read once per sync and
// written at most once, only when it changed.
package inventory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Keys and names of the sync record (its plimsoll.dev/ keys are in
// package contract).
const (
	// LabelManagedBy marks the ConfigMap as plimsoll's.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// DataInventory is the data key of the inventory: one applied object a
	// line, "<hash> <apiVersion> <kind> <namespace or -> <name>", sorted.
	DataInventory = "inventory"

	// DataTemplates is the data key of the pod templates of the commit
	// applied (contract.AnnotationCommit): one Git Deployment a line,
	// "<namespace> <name> <template hash>", sorted, and one StatefulSet
	// or DaemonSet "<kind> <namespace>/<name> <template hash>" (its key,
	// contract.SetTemplateKey, cut at its first slash). A wait for that
	// commit compares them with each workload's plimsoll.dev/template-hash
	// to tell a revision not started yet from a template the commit left
	// as it was.
	DataTemplates = "templates"

	// FieldManager is the field manager of every write to the record.
	FieldManager = managedBy

	// MinAcceptDigits is the shortest prefix of a commit's hash that
	// accepts it as a rewind (contract.AnnotationAcceptRewind): the short
	// hash the status shows.
	MinAcceptDigits = 7

	managedBy   = "plimsoll"
	noNamespace = "-"
)

// Entry is one object the sync applied.
type Entry struct {
	APIVersion string
	Kind       string
	Namespace  string // empty for cluster-scoped objects
	Name       string
	// Hash is the digest of the desired object as last applied; a sync
	// whose desired object hashes the same need not write it again.
	Hash string
}

// Key is the entry's object key.
func (e Entry) Key() manifest.Key {
	gv, _ := schema.ParseGroupVersion(e.APIVersion)
	return manifest.Key{Group: gv.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
}

// Inventory is the set of objects a sync applied, by key. The key leaves
// out the API version, so an object that moves from one version of its
// group to another stays the same object.
type Inventory map[manifest.Key]Entry

// Status is the sync status shown on the ConfigMap.
type Status struct {
	State         string
	Commit        string
	FetchedCommit string
	Message       string
	StaleSince    string
}

// Record is everything a sync keeps between runs.
type Record struct {
	Status    Status
	Inventory Inventory
	// Templates are the template hashes of the Deployments of the
	// commit applied (see DataTemplates), by namespace/name; nil leaves
	// the stored ones as they are.
	Templates map[string]string
	// Lost says why Inventory could not be read, "" when it was: the
	// record does not exist (Missing), or its inventory does not parse.
	// Inventory is nil then; the status is read whatever the inventory.
	Lost string
	// BlockedWriter is the note of a daemon that finds the sync held by
	// another (contract.AnnotationBlockedWriter); read, never written here.
	BlockedWriter string
	// AcceptRewind is the commit a person accepted as a rewind
	// (contract.AnnotationAcceptRewind), "" for none; read, never written
	// here. Save removes the annotation when SpentRewind names it.
	AcceptRewind string
	// SpentRewind, when set, is an AcceptRewind value that has served: Save
	// removes the annotation if it still holds that value, and leaves one
	// a person set meanwhile.
	SpentRewind string
}

// Missing is Record.Lost of a sync whose record does not exist: one that
// never ran, or whose ConfigMap was deleted.
const Missing = "the sync record does not exist"

// Store reads and writes one sync's record.
type Store struct {
	client    kubernetes.Interface
	namespace string
	name      string
	syncName  string
}

// NewStore returns the store of sync syncName, kept in namespace.
func NewStore(client kubernetes.Interface, namespace, syncName string) *Store {
	return &Store{client: client, namespace: namespace, name: contract.NamePrefix + syncName, syncName: syncName}
}

// Object names the ConfigMap, for Events about the sync.
func (s *Store) Object() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: s.namespace, Name: s.name}
}

// Load reads the record. Without one (see Missing), or with an inventory
// that does not parse, the record says so in Lost; only a failure to read
// the ConfigMap is an error.
func (s *Store) Load(ctx context.Context) (Record, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Record{Lost: Missing}, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("read sync record %s/%s: %w", s.namespace, s.name, err)
	}
	return decode(cm), nil
}

// Delete deletes the record, for a sync that is gone; a record gone
// already is no error.
func (s *Store) Delete(ctx context.Context) error {
	err := s.client.CoreV1().ConfigMaps(s.namespace).Delete(ctx, s.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete sync record %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}

// Save writes rec if it differs from what is stored, and reports whether
// it wrote. A nil rec.Inventory leaves the stored inventory as it is (one
// that could be neither read nor rebuilt stays for a later try). A write
// that conflicts with another writer's (a requested sync, a blocked
// writer's note) is made again on the fresh record.
func (s *Store) Save(ctx context.Context, rec Record) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		wrote, err = s.save(ctx, rec)
		return err
	})
	return wrote, err
}

func (s *Store) save(ctx context.Context, rec Record) (bool, error) {
	configMaps := s.client.CoreV1().ConfigMaps(s.namespace)
	cm, err := configMaps.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace}}
		encode(cm, s.syncName, rec)
		if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{FieldManager: managedBy}); err != nil {
			return false, fmt.Errorf("create sync record %s/%s: %w", s.namespace, s.name, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read sync record %s/%s: %w", s.namespace, s.name, err)
	}
	updated := cm.DeepCopy()
	encode(updated, s.syncName, rec)
	if maps.Equal(updated.Annotations, cm.Annotations) && maps.Equal(updated.Data, cm.Data) &&
		maps.Equal(updated.Labels, cm.Labels) {
		return false, nil
	}
	if _, err := configMaps.Update(ctx, updated, metav1.UpdateOptions{FieldManager: managedBy}); err != nil {
		return false, fmt.Errorf("update sync record %s/%s: %w", s.namespace, s.name, err)
	}
	return true, nil
}

func encode(cm *corev1.ConfigMap, syncName string, rec Record) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[LabelManagedBy] = managedBy
	cm.Labels[contract.LabelSync] = syncName
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	set := func(key, value string) {
		if value == "" {
			delete(cm.Annotations, key)
			return
		}
		cm.Annotations[key] = value
	}
	set(contract.AnnotationSyncStatus, rec.Status.State)
	set(contract.AnnotationCommit, rec.Status.Commit)
	set(contract.AnnotationFetchedCommit, rec.Status.FetchedCommit)
	set(contract.AnnotationMessage, rec.Status.Message)
	set(contract.AnnotationStaleSince, rec.Status.StaleSince)
	if rec.SpentRewind != "" && cm.Annotations[contract.AnnotationAcceptRewind] == rec.SpentRewind {
		delete(cm.Annotations, contract.AnnotationAcceptRewind)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	if rec.Inventory != nil {
		cm.Data[DataInventory] = rec.Inventory.String()
	}
	switch {
	case rec.Templates == nil:
	case len(rec.Templates) == 0:
		delete(cm.Data, DataTemplates)
	default:
		cm.Data[DataTemplates] = templatesString(rec.Templates)
	}
}

func decode(cm *corev1.ConfigMap) Record {
	a := cm.Annotations
	rec := Record{Status: Status{
		State:         a[contract.AnnotationSyncStatus],
		Commit:        a[contract.AnnotationCommit],
		FetchedCommit: a[contract.AnnotationFetchedCommit],
		Message:       a[contract.AnnotationMessage],
		StaleSince:    a[contract.AnnotationStaleSince],
	}, BlockedWriter: a[contract.AnnotationBlockedWriter], AcceptRewind: a[contract.AnnotationAcceptRewind],
		Templates: ParseTemplates(cm.Data[DataTemplates])}
	inv, err := ParseInventory(cm.Data[DataInventory])
	if err != nil {
		rec.Lost = fmt.Sprintf("the inventory of %s/%s does not parse: %v", cm.Namespace, cm.Name, err)
		return rec
	}
	rec.Inventory = inv
	return rec
}

// String encodes the inventory as sorted lines (see DataInventory).
func (inv Inventory) String() string {
	lines := make([]string, 0, len(inv))
	for _, e := range inv {
		ns := e.Namespace
		if ns == "" {
			ns = noNamespace
		}
		lines = append(lines, strings.Join([]string{e.Hash, e.APIVersion, e.Kind, ns, e.Name}, " "))
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// ParseInventory decodes what Inventory.String encodes.
func ParseInventory(s string) (Inventory, error) {
	inv := Inventory{}
	for i, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: want 5 fields (hash apiVersion kind namespace name), got %d", i+1, len(f))
		}
		e := Entry{Hash: f[0], APIVersion: f[1], Kind: f[2], Namespace: f[3], Name: f[4]}
		if e.Namespace == noNamespace {
			e.Namespace = ""
		}
		inv[e.Key()] = e
	}
	return inv, nil
}

// templatesString encodes template hashes by namespace/name as sorted
// lines (see DataTemplates).
func templatesString(templates map[string]string) string {
	lines := make([]string, 0, len(templates))
	for key, hash := range templates {
		ns, name, _ := strings.Cut(key, "/")
		lines = append(lines, ns+" "+name+" "+hash)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// ParseTemplates decodes the template hashes of a record's data (see
// DataTemplates) by namespace/name; nil when it has none. A line that is
// not three fields is left out: the hashes inform a wait, which reads a
// workload it finds no hash for as it would without them.
func ParseTemplates(s string) map[string]string {
	var templates map[string]string
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		if templates == nil {
			templates = map[string]string{}
		}
		templates[f[0]+"/"+f[1]] = f[2]
	}
	return templates
}
