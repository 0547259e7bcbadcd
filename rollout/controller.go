package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/events"
	"plimsoll.dev/plimsoll/strategies"
)

// Keys, values, reasons and defaults of the rollout controller. The
// plimsoll.dev/ keys are in package contract.
const (
	// AnnotationChangeCause is what `kubectl rollout history` lists; the
	// controller sets it to "<short commit> <subject>".
	AnnotationChangeCause = strategies.AnnotationChangeCause

	// DefaultScaleDownDelay is how long the old blue-green color stays up
	// without plimsoll.dev/scale-down-delay.
	DefaultScaleDownDelay = 30 * time.Second

	// FieldManager is the server-side apply field manager of the
	// Deployments the controller writes.
	FieldManager = "plimsoll-rollout"
	// Component is the source of the controller's Events.
	Component = "plimsoll-rollout"

	// autoscalerManager is the field manager of the count a
	// HorizontalPodAutoscaler sets (the controller manager's).
	autoscalerManager = "kube-controller-manager"
	// outOfServiceCost is the deletion cost of a pod the controller took
	// out of the Service (see labelPod): below the 0 every other pod has.
	outOfServiceCost = "-1"

	// DefaultWorkers is how many workloads are reconciled at once.
	DefaultWorkers = 4
	// resyncPeriod re-lists the informers' objects now and then, so a
	// missed event is made up for.
	resyncPeriod = 10 * time.Minute
	// writeMemory is how long the controller prefers an object it wrote
	// over an older copy in its cache (see recentWrites).
	writeMemory = time.Minute
	// heldRetry is how soon a workload is looked at again while another
	// daemon holds the sync (see Config.Writable).
	heldRetry = 2 * time.Second
	// writableLook is how often Run looks whether it may start its
	// workers.
	writableLook = 100 * time.Millisecond
	// retryBase and retryMax bound the retries of a workload whose
	// reconcile failed: 5 ms, doubling per failure, at most 10 s (client-go's
	// default goes to 1000 s). A 20 s API server outage is about a dozen
	// failures: with the default the workload's next try could be 20-40 s
	// after the server is back, after a longer one minutes; here it is at
	// most 10 s. retryQPS and retryBurst bound the retries of all workloads
	// together.
	retryBase  = 5 * time.Millisecond
	retryMax   = 10 * time.Second
	retryQPS   = 10
	retryBurst = 100
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
	// Clock tells the time to the planners; the real clock when nil.
	Clock clock.Clock
	// Once makes every handoff wait until the controller has reconciled
	// the Deployments it took, and writes Events synchronously: what a
	// one-shot sync needs, which exits right after.
	Once bool
	// Writable, when set, says whether this daemon may write: while it
	// says no (another daemon holds the sync), no workload is reconciled,
	// and each is looked at again every 2s.
	Writable func() bool
	// Measurer takes the measurements of the workloads' analyses; without
	// one, every measurement is an error (and an analysis fails at its
	// consecutive-error limit, never passes).
	Measurer Measurer
	// Notifier, when set, is told of every status written (see
	// StatusReport), after the log line, the metrics and the Event.
	Notifier Notifier
	// Owns, when set, makes the controller serve the workloads of many
	// syncs (see syncs.go): it watches every Deployment labelled
	// plimsoll.dev/sync, and reconciles a workload only while Owns says
	// its sync is this replica's, holding that until release is called.
	Owns func(syncName string) (release func(), owned bool)
	// ClientFor, when set, gives the client a sync's workloads are written
	// with (the sync's identity); reads stay on the informers and Client.
	ClientFor func(syncName string) kubernetes.Interface
}

// Controller is the embedded rollout controller: the sync.DeploymentSink that
// takes the Deployments of each synced commit and the reconcile loop that
// rolls them out. Workloads are keyed "namespace/name" and found by the
// plimsoll.dev/workload label, which the controller puts on every
// Deployment and pod template it writes. Every reconcile reads the
// informers' caches; the API server sees only the writes a plan asks for.
type Controller struct {
	client  kubernetes.Interface
	log     *slog.Logger
	workers int
	clock   clock.Clock
	// once is Config.Once, until Follow ends it.
	once atomic.Bool
	// writable says whether the controller may write (Config.Writable).
	writable func() bool
	// factories are the informer factories: per watched namespace,
	// Deployments, then the workload-labelled ReplicaSets and Pods, then
	// Services, EndpointSlices and HorizontalPodAutoscalers, then analyses.
	factories []informers.SharedInformerFactory
	// views holds the listers by namespace, metav1.NamespaceAll when the
	// controller watches every namespace.
	views   map[string]view
	synced  []cache.InformerSynced
	started chan struct{}
	queue   workqueue.TypedRateLimitingInterface[string]
	// sets queues the StatefulSets and DaemonSets, by setKey, and
	// setCommits knows which commit gave each its template.
	sets       workqueue.TypedRateLimitingInterface[string]
	setCommits setCommits
	events     *events.Recorder
	metrics    *Metrics
	// written, steered, labelled and mirrored remember the Deployments
	// this controller wrote, the Services whose selectors it patched, the
	// pods it labelled and the ReplicaSets it copied a status to, until
	// its caches have caught up with them.
	written  *recentWrites[*appsv1.Deployment]
	steered  *recentWrites[*corev1.Service]
	labelled *recentWrites[*corev1.Pod]
	mirrored *recentWrites[*appsv1.ReplicaSet]
	// specs tells the generation of each Deployment's spec through the
	// controller's own status writes (see specGenerations).
	specs *specGenerations
	// templates remembers which Deployments' templates hold Git's, and
	// hand which have one that kubectl changed (see runsGit).
	templates *templateChecks
	hand      *handEdits
	// intents holds what Git asks of each workload, by key.
	intents *intents
	// measurer takes the analyses' measurements (Config.Measurer).
	measurer Measurer
	// notifier hears of the statuses written (Config.Notifier); nil for
	// none.
	notifier Notifier
	// syncName is Config.SyncName: the sync whose prune a workload
	// leaving Git meets, for a handoff that names none (see handOff).
	syncName string
	// owns and clientFor are Config.Owns and Config.ClientFor.
	owns      func(syncName string) (release func(), owned bool)
	clientFor func(syncName string) kubernetes.Interface
	// grants are the rights the syncs' identities were found to have
	// (see checkRights).
	grants grants
}

// New returns a Controller. Its informers on Deployments, ReplicaSets and
// Pods watch only objects labelled plimsoll.dev/workload, so memory does
// not grow with unrelated workloads, and Deployments only of its own sync
// when cfg.SyncName is set; Services and EndpointSlices, which carry no
// such label, are watched whole. With cfg.Namespaces, each namespace gets
// its own informers.
func New(cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Writable == nil {
		cfg.Writable = func() bool { return true }
	}
	if cfg.Measurer == nil {
		cfg.Measurer = noMeasurer{}
	}
	c := &Controller{
		syncName:  cfg.SyncName,
		writable:  cfg.Writable,
		client:    cfg.Client,
		log:       cfg.Log,
		workers:   cfg.Workers,
		clock:     cfg.Clock,
		views:     map[string]view{},
		started:   make(chan struct{}),
		queue:     workqueue.NewTypedRateLimitingQueue(retryLimiter()),
		sets:      workqueue.NewTypedRateLimitingQueue(retryLimiter()),
		events:    events.New(cfg.Client, cfg.Clock, cfg.Log, Component, eventMode(cfg.Once)),
		metrics:   cfg.Metrics,
		written:   newRecentWrites[*appsv1.Deployment](cfg.Clock, writeMemory),
		steered:   newRecentWrites[*corev1.Service](cfg.Clock, writeMemory),
		labelled:  newRecentWrites[*corev1.Pod](cfg.Clock, writeMemory),
		mirrored:  newRecentWrites[*appsv1.ReplicaSet](cfg.Clock, writeMemory),
		specs:     newSpecGenerations(),
		templates: newTemplateChecks(),
		hand:      newHandEdits(),
		intents:   newIntents(),
		measurer:  cfg.Measurer,
		notifier:  cfg.Notifier,
		owns:      cfg.Owns,
		clientFor: cfg.ClientFor,
	}
	c.once.Store(cfg.Once)
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
	} else if cfg.Owns != nil {
		ours += "," + contract.LabelSync
	}
	deployFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ours }))
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelWorkload }))
	// Services and their EndpointSlices carry no workload label: they are
	// watched unfiltered, and mapped to the workloads whose annotations
	// name them.
	serviceFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns))
	// Analyses are ConfigMaps labelled plimsoll.dev/analysis; no other
	// ConfigMap is held.
	analysisFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelAnalysis }))

	deployInformer := deployFactory.Apps().V1().Deployments()
	rsInformer := factory.Apps().V1().ReplicaSets()
	podInformer := factory.Core().V1().Pods()
	serviceInformer := serviceFactory.Core().V1().Services()
	sliceInformer := serviceFactory.Discovery().V1().EndpointSlices()
	analysisInformer := analysisFactory.Core().V1().ConfigMaps()
	// HorizontalPodAutoscalers carry no workload label either: few per
	// namespace, watched whole and mapped to the Deployment they target.
	autoscalerInformer := serviceFactory.Autoscaling().V2().HorizontalPodAutoscalers()
	// StatefulSets and DaemonSets carry no workload label: those the
	// sync applied are watched, by its label.
	setFactory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, resyncPeriod, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = setSelector(cfg) }))
	stsInformer := setFactory.Apps().V1().StatefulSets()
	dsInformer := setFactory.Apps().V1().DaemonSets()
	c.factories = append(c.factories, deployFactory, factory, serviceFactory, analysisFactory, setFactory)
	setTrim(c.hand, deployInformer.Informer(), rsInformer.Informer(), podInformer.Informer(), serviceInformer.Informer(),
		sliceInformer.Informer(), analysisInformer.Informer(), autoscalerInformer.Informer(), stsInformer.Informer(), dsInformer.Informer())
	byWorkloadLabel := labelIndex(contract.LabelWorkload)
	addIndexers(deployInformer.Informer(), cache.Indexers{byWorkload: byWorkloadLabel, byService: steeredIndex})
	addIndexers(rsInformer.Informer(), cache.Indexers{byWorkload: byWorkloadLabel})
	addIndexers(podInformer.Informer(), cache.Indexers{byWorkload: byWorkloadLabel})
	addIndexers(sliceInformer.Informer(), cache.Indexers{byService: labelIndex(serviceNameLabel)})
	c.views[ns] = view{
		index: indexes{deploys: deployInformer.Informer().GetIndexer(), rsets: rsInformer.Informer().GetIndexer(),
			pods: podInformer.Informer().GetIndexer(), slices: sliceInformer.Informer().GetIndexer()},
		deploys:      deployInformer.Lister(),
		services:     serviceInformer.Lister(),
		analyses:     analysisInformer.Lister(),
		autoscalers:  autoscalerInformer.Lister(),
		statefulSets: stsInformer.Lister(),
		daemonSets:   dsInformer.Lister(),
	}
	c.synced = append(c.synced, deployInformer.Informer().HasSynced, rsInformer.Informer().HasSynced,
		podInformer.Informer().HasSynced, serviceInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced,
		analysisInformer.Informer().HasSynced, autoscalerInformer.Informer().HasSynced,
		stsInformer.Informer().HasSynced, dsInformer.Informer().HasSynced)
	_, _ = deployInformer.Informer().AddEventHandler(onEvery(c.enqueueWorkload))
	_, _ = rsInformer.Informer().AddEventHandler(onEvery(c.enqueueWorkload))
	_, _ = podInformer.Informer().AddEventHandler(onEvery(c.enqueueWorkload))
	_, _ = serviceInformer.Informer().AddEventHandler(onEvery(c.enqueueServiceUsers))
	_, _ = sliceInformer.Informer().AddEventHandler(onEvery(c.enqueueSliceUsers))
	_, _ = autoscalerInformer.Informer().AddEventHandler(onEvery(c.enqueueAutoscaled))
	_, _ = stsInformer.Informer().AddEventHandler(onEvery(c.enqueueSet))
	_, _ = dsInformer.Informer().AddEventHandler(onEvery(c.enqueueSet))
}

// Run starts the informers and the workers and blocks until ctx ends; then
// it delivers the Events still queued.
func (c *Controller) Run(ctx context.Context) error {
	defer c.events.Shutdown()
	defer c.queue.ShutDown()
	defer c.sets.ShutDown()
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
	close(c.started)
	for !c.writable() {
		// Another daemon holds the sync: the workers start once it is gone.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(writableLook):
		}
	}
	c.log.Info("rollout controller started", "workers", c.workers)
	for i := 0; i < c.workers; i++ {
		go wait.UntilWithContext(ctx, c.work, time.Second)
	}
	for i := 0; i < max(c.workers/2, 1); i++ {
		go wait.UntilWithContext(ctx, c.workSets, time.Second)
	}
	<-ctx.Done()
	return nil
}

// Started is closed once Run has filled the caches.
func (c *Controller) Started() <-chan struct{} { return c.started }

// running reports whether Run has filled the caches.
func (c *Controller) running() bool {
	select {
	case <-c.started:
		return true
	default:
		return false
	}
}

func (c *Controller) work(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

// retryLimiter spaces the retries of failed reconciles: per workload
// exponentially up to retryMax, and all together at retryQPS.
func retryLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBase, retryMax),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(retryQPS), retryBurst)},
	)
}

// processNext reconciles one workload: Forget on success, AddRateLimited on
// error. A handoff waiting for the workload hears how it went.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if !c.writable() {
		// Another daemon holds the sync: plan nothing until it is gone.
		c.queue.Forget(key)
		c.queue.AddAfter(key, heldRetry)
		return true
	}
	release, owned := c.own(key)
	if !owned {
		c.queue.Forget(key) // another replica's; QueueSync brings it back
		return true
	}
	defer release()
	err := c.reconcile(ctx, key)
	c.intents.reconciled(key, err)
	switch {
	case err != nil && refused(err):
		if c.queue.NumRequeues(key) >= refusalsReported {
			c.reportRefusal(ctx, key, err)
		} else {
			c.log.Info("write refused; retrying", "workload", key, "err", err)
		}
		c.queue.AddRateLimited(key)
		return true
	case err != nil:
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
	if c.once.Load() {
		return // a one-shot sync reconciles what it hands off, no more
	}
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
	if m, err := meta.Accessor(obj); err == nil {
		c.enqueueUsersOf(m.GetNamespace(), m.GetName())
	}
}

// enqueueSliceUsers queues the workloads that steer the Service an
// EndpointSlice belongs to: a blue-green color scales down once the active
// Service's endpoints have left it.
func (c *Controller) enqueueSliceUsers(obj any) {
	if m, err := meta.Accessor(obj); err == nil {
		if svc := m.GetLabels()[serviceNameLabel]; svc != "" {
			c.enqueueUsersOf(m.GetNamespace(), svc)
		}
	}
}

// enqueueUsersOf queues the workloads of namespace ns that steer Service
// service.
func (c *Controller) enqueueUsersOf(ns, service string) {
	if c.once.Load() {
		return
	}
	for _, key := range c.serviceUsers(ns, service) {
		c.queue.Add(key)
	}
}

// eventFor records an Event about d.
func (c *Controller) eventFor(ctx context.Context, d runtime.Object, eventType, reason, message string) {
	c.events.Event(ctx, d, eventType, reason, message)
}

// eventMode is how the controller's Events are written: in the
// background in the daemon, so that a reconcile never waits for one;
// before the reconcile goes on in once mode, so that a one-shot sync has
// recorded them when it exits.
func eventMode(once bool) events.Mode {
	if once {
		return events.Wait
	}
	return events.Background
}
