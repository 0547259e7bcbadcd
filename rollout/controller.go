package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"plimsoll.dev/plimsoll/contract"
)

// Keys, values, reasons and defaults of the rollout controller.
const (
	// AnnotationChangeCause is what `kubectl rollout history` lists; the
	// controller sets it to "<short commit> <subject>".
	AnnotationChangeCause = "kubernetes.io/change-cause"

	// DefaultScaleDownDelay is how long the old blue-green color stays up
	// without plimsoll.dev/scale-down-delay.
	DefaultScaleDownDelay = 30 * time.Second

	// FieldManager is the server-side apply field manager of the
	// Deployments the controller writes.
	FieldManager = "plimsoll-rollout"
	// Component is the source of the controller's Events.
	Component = "plimsoll-rollout"

	// ReasonRolledBack is the Event reason of an automatic rollback.
	ReasonRolledBack = "RolledBack"
	// ReasonRolloutFailed is the Event reason of a failed revision that is
	// not rolled back.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonCommand is the Event reason of a command acted on.
	ReasonCommand = "Command"
	// ReasonPhase is the Event reason of a phase change.
	ReasonPhase = "PhaseChanged"

	// DefaultWorkers is how many workloads are reconciled at once.
	DefaultWorkers = 4
	// resyncPeriod re-lists the informers' objects now and then, so a
	// missed event is made up for.
	resyncPeriod = 10 * time.Minute
	shortCommit  = 7
)

// Config wires a Controller.
type Config struct {
	Client  kubernetes.Interface
	Log     *slog.Logger
	Workers int
	// SyncName, when set, limits the reconcile loop to the Deployments
	// labelled plimsoll.dev/sync=SyncName: those its own sync applied.
	SyncName string
	// Namespaces, when set, limits the controller to these namespaces: its
	// informers list and watch there only, so it needs no right elsewhere,
	// and it refuses a Deployment of any other namespace. Empty means all.
	Namespaces []string
	// Metrics, when set, records the rollouts' phases, durations,
	// rollbacks and commands.
	Metrics *Metrics
}

// Controller is the embedded rollout controller: the DeploymentSink that
// takes the Deployments of each synced commit and the reconcile loop that
// follows their rollouts. Workloads are keyed "namespace/name" and found
// by the plimsoll.dev/workload label, which the controller puts on every
// Deployment and pod template it writes.
type Controller struct {
	client  kubernetes.Interface
	log     *slog.Logger
	workers int
	// factories are the informer factories: per watched namespace,
	// Deployments, ReplicaSets and Pods, Services.
	factories []informers.SharedInformerFactory
	// views holds the listers by namespace, metav1.NamespaceAll when the
	// controller watches every namespace.
	views    map[string]view
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	events   record.EventRecorder
	eventsBC record.EventBroadcaster
	locks    keyedMutex
	metrics  *Metrics
}

// view is what the informers of one namespace (or of all) hold.
type view struct {
	deploys appslisters.DeploymentLister
	rsets   appslisters.ReplicaSetLister
}

// New returns a Controller. Its informers on Deployments, ReplicaSets and
// Pods watch only objects labelled plimsoll.dev/workload, so memory does
// not grow with unrelated workloads, and Deployments only of its own sync
// when cfg.SyncName is set; Services, which carry no such label, are
// watched whole. With cfg.Namespaces, each namespace gets its own
// informers.
func New(cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	bc := record.NewBroadcaster()
	c := &Controller{
		client:   cfg.Client,
		log:      cfg.Log,
		workers:  cfg.Workers,
		views:    map[string]view{},
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		events:   bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Component}),
		eventsBC: bc,
		metrics:  cfg.Metrics,
	}
	namespaces := cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		c.watch(cfg, ns)
	}
	return c
}

// watch sets up the informers of namespace ns (metav1.NamespaceAll: every
// namespace) and their event handlers.
func (c *Controller) watch(cfg Config, ns string) {
	ours := contract.LabelWorkload
	if cfg.SyncName != "" {
		ours += "," + contract.LabelSync + "=" + cfg.SyncName
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelWorkload }))
	deployFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ours }))
	// Services carry no workload label: they are watched unfiltered, and
	// mapped to the workloads whose annotations name them.
	serviceFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns))

	deployInformer := deployFactory.Apps().V1().Deployments()
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()
	serviceInformer := serviceFactory.Core().V1().Services()
	c.factories = append(c.factories, deployFactory, factory, serviceFactory)
	c.views[ns] = view{deploys: deployInformer.Lister(), rsets: rsInformer.Lister()}
	c.synced = append(c.synced, deployInformer.Informer().HasSynced, rsInformer.Informer().HasSynced,
		podInformer.Informer().HasSynced, serviceInformer.Informer().HasSynced)
	_, _ = deployInformer.Informer().AddEventHandler(onEvery(c.enqueueWorkload))
	_, _ = rsInformer.Informer().AddEventHandler(onEvery(c.enqueueWorkload))
	_, _ = podInformer.Informer().AddEventHandler(onEvery(c.enqueueWorkload))
	_, _ = serviceInformer.Informer().AddEventHandler(onEvery(c.enqueueServiceUsers))
}

// watches reports whether the controller follows namespace ns.
func (c *Controller) watches(ns string) bool {
	_, ok := c.viewOf(ns)
	return ok
}

// deployments lists the cached Deployments of namespace ns; none when the
// controller does not watch it.
func (c *Controller) deployments(ns string) appslisters.DeploymentNamespaceLister {
	return c.view(ns).deploys.Deployments(ns)
}

// replicaSets lists the cached ReplicaSets of namespace ns; none when the
// controller does not watch it.
func (c *Controller) replicaSets(ns string) appslisters.ReplicaSetNamespaceLister {
	return c.view(ns).rsets.ReplicaSets(ns)
}

// view returns the listers of namespace ns, empty ones when the controller
// does not watch it.
func (c *Controller) view(ns string) view {
	if v, ok := c.viewOf(ns); ok {
		return v
	}
	empty := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return view{deploys: appslisters.NewDeploymentLister(empty), rsets: appslisters.NewReplicaSetLister(empty)}
}

// viewOf finds the informers that hold namespace ns: its own, or those of
// every namespace; ok is false when the controller does not watch it.
func (c *Controller) viewOf(ns string) (v view, ok bool) {
	if v, ok = c.views[ns]; !ok {
		v, ok = c.views[metav1.NamespaceAll]
	}
	return v, ok
}

// Run starts the informers and the workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	c.eventsBC.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	defer c.eventsBC.Shutdown()
	for _, f := range c.factories {
		defer f.Shutdown()
	}
	// Registered after the shutdowns, so it runs before them: the
	// informers stop first, however Run ends (a panic included).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("wait for the rollout controller's caches to sync: %w", ctx.Err())
	}
	c.log.Info("rollout controller started", "workers", c.workers)
	for i := 0; i < c.workers; i++ {
		go wait.UntilWithContext(ctx, c.work, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

// processNext reconciles one workload: Forget on success, AddRateLimited on
// error.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		c.log.Info("reconcile failed; retrying", "workload", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// onEvery calls enqueue with the object of every add, update and delete,
// the last object of a tombstone included.
func onEvery(enqueue func(obj any)) cache.ResourceEventHandlerFuncs {
	unwrap := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		enqueue(obj)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    unwrap,
		UpdateFunc: func(_, obj any) { unwrap(obj) },
		DeleteFunc: unwrap,
	}
}

// enqueueWorkload queues the workload an object belongs to, by its
// plimsoll.dev/workload label: a Deployment changed, a ReplicaSet scaled, a
// pod that turns ready or goes away moves the rollout on.
func (c *Controller) enqueueWorkload(obj any) {
	if m, err := meta.Accessor(obj); err == nil {
		if name := m.GetLabels()[contract.LabelWorkload]; name != "" {
			c.queue.Add(m.GetNamespace() + "/" + name)
		}
	}
}

// enqueueServiceUsers queues the workloads of the Service's namespace whose
// annotations name it: a Service edited or deleted by hand is a workload's
// business when its strategy steers that Service.
func (c *Controller) enqueueServiceUsers(obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	deploys, err := c.deployments(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range deploys {
		for _, key := range []string{contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService} {
			if d.Annotations[key] == m.GetName() {
				c.queue.Add(d.Namespace + "/" + d.Labels[contract.LabelWorkload])
				break
			}
		}
	}
}

// keyedMutex serializes work on one workload: the reconcile loop and a
// sync's hand-off must not plan the same workload at once.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*sync.Mutex{}
	}
	m, ok := k.locks[key]
	if !ok {
		m = &sync.Mutex{}
		k.locks[key] = m
	}
	k.mu.Unlock()
	m.Lock()
	return m.Unlock
}
