package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	gosync "sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/declare"
)

// FieldManager is the field manager of the finalizer the fleet puts on
// the declarations it runs.
const FieldManager = "plimsoll-fleet"

// Builder builds the sync a declaration declares.
type Builder func(ctx context.Context, spec *declare.Spec) (*Sync, error)

// DeclaredConfig wires Declared.
type DeclaredConfig struct {
	// Client reads the declarations and puts the finalizer on them.
	Client kubernetes.Interface
	// Namespace is where declarations are taken from.
	Namespace string
	Fleet     *Fleet
	Build     Builder
	Log       *slog.Logger
}

// Declared keeps the fleet's declared syncs as their declarations say: a
// new or changed declaration that parses is built and put in the fleet;
// one that does not parse is refused, and the sync goes on as it was
// last declared; a declaration deleted is retired (see Retire). A sync
// that runs holds its declaration with the finalizer
// contract.FinalizerRetire, so that a replica that restarts while the
// declaration is deleted still finds what to retire, and as whom.
type Declared struct {
	cfg DeclaredConfig
	mu  gosync.Mutex
	// digests are the declarations the fleet runs, by name.
	digests map[string]string
	synced  chan struct{}
}

// NewDeclared returns a Declared.
func NewDeclared(cfg DeclaredConfig) *Declared {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Declared{cfg: cfg, digests: map[string]string{}, synced: make(chan struct{})}
}

// Synced is closed once every declaration that existed at the start has
// been read.
func (d *Declared) Synced() <-chan struct{} { return d.synced }

// Run follows the declarations until ctx ends.
func (d *Declared) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(d.cfg.Client, 0, informers.WithNamespace(d.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelSyncDeclaration }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { d.observe(ctx, obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok && d.cfg.Fleet.Has(cm.Name) {
				d.gone(ctx, cm) // not retired yet
			}
		},
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("read the sync declarations of namespace %s: %w", d.cfg.Namespace, ctx.Err())
	}
	close(d.synced)
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// observe takes a declaration added or changed.
func (d *Declared) observe(ctx context.Context, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	if cm.DeletionTimestamp != nil {
		d.gone(ctx, cm)
		return
	}
	spec, err := declare.Parse(cm)
	if err != nil {
		d.cfg.Log.Warn("sync declaration refused; the sync goes on as last declared", "sync", cm.Name,
			"declaration", d.cfg.Namespace+"/"+cm.Name, "err", err)
		return
	}
	d.mu.Lock()
	same := d.digests[cm.Name] == spec.Digest
	d.mu.Unlock()
	if same {
		return
	}
	s, err := d.build(ctx, spec)
	if err != nil {
		d.cfg.Log.Error("build the declared sync; it goes on as last declared", "sync", cm.Name, "err", err)
		return
	}
	d.mu.Lock()
	d.digests[cm.Name] = spec.Digest
	d.mu.Unlock()
	d.cfg.Log.Info("sync declared", "sync", spec.Name, "repo", spec.Repository, "branch", spec.Branch, "path", spec.Path,
		"serviceAccount", spec.ServiceAccount.String())
	d.cfg.Fleet.Put(spec.Name, s, spec.Interval)
}

// build builds the sync of spec, holding its declaration with the
// finalizer before its first poll.
func (d *Declared) build(ctx context.Context, spec *declare.Spec) (*Sync, error) {
	s, err := d.cfg.Build(ctx, spec)
	if err != nil {
		return nil, err
	}
	prepare := s.Prepare
	s.Prepare = func(ctx context.Context) error {
		if err := d.finalizer(ctx, spec.Name, true); err != nil {
			return err
		}
		if prepare != nil {
			return prepare(ctx)
		}
		return nil
	}
	return s, nil
}

// gone retires the sync of a declaration deleted, or being deleted: the
// sync it declares, rebuilt from it when this replica did not run it,
// prunes what it applied (or leaves it, without prune) and its record
// goes; then the finalizer is taken off. A declaration that does not
// parse any more retires nothing but the finalizer.
func (d *Declared) gone(ctx context.Context, cm *corev1.ConfigMap) {
	d.mu.Lock()
	delete(d.digests, cm.Name)
	d.mu.Unlock()
	name := cm.Name
	held := false
	for _, f := range cm.Finalizers {
		held = held || f == contract.FinalizerRetire
	}
	spec, err := declare.Parse(cm)
	if err != nil {
		d.cfg.Log.Warn("a sync declaration that does not parse is gone; nothing of its sync is pruned", "sync", name, "err", err)
		d.cfg.Fleet.Retire(name, func(ctx context.Context) error { return d.finalizer(ctx, name, false) })
		return
	}
	d.cfg.Fleet.Retire(name, func(ctx context.Context) error {
		s, err := d.cfg.Build(ctx, spec)
		if err != nil {
			return err
		}
		if err := s.Syncer.Retire(ctx); err != nil {
			return err
		}
		if !held {
			return nil
		}
		return d.finalizer(ctx, name, false)
	})
}

// finalizer puts contract.FinalizerRetire on the declaration name, or
// takes it off. A declaration gone already needs neither.
func (d *Declared) finalizer(ctx context.Context, name string, on bool) error {
	configMaps := d.cfg.Client.CoreV1().ConfigMaps(d.cfg.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := configMaps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(cm.Finalizers), func(f string) bool { return f == contract.FinalizerRetire })
		if on {
			kept = append(kept, contract.FinalizerRetire)
		}
		if slices.Equal(kept, cm.Finalizers) {
			return nil
		}
		cm.Finalizers = kept
		_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set finalizer %s of declaration %s/%s: %w", contract.FinalizerRetire, d.cfg.Namespace, name, err)
	}
	return nil
}
