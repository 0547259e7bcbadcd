package main

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/internal/events"
	"plimsoll.dev/plimsoll/notify"
	"plimsoll.dev/plimsoll/rollout"
	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/helm"
	"plimsoll.dev/plimsoll/sync/inventory"
)

// daemon is everything a sync needs, wired.
type daemon struct {
	syncer          *psync.Syncer
	rollouts        *rollout.Controller
	store           *inventory.Store
	client          kubernetes.Interface
	statusNamespace string
	// standby is true while the daemon waits for the leader Lease: it is
	// ready, and passes the hooks it receives on to the leader.
	standby atomic.Bool
	// exclusive is set for a daemon without --leader-elect (see
	// runExclusive): it writes only while held; holder is the identity of
	// the Lease's holder as last seen ("" before any).
	exclusive bool
	held      atomic.Bool
	holder    atomic.Value
}

// writable reports whether the daemon may write: always, but for an
// exclusive daemon that does not hold its sync.
func (d *daemon) writable() bool { return !d.exclusive || d.held.Load() }

// wire builds the syncer and its parts from the flags.
// With once, the rollout controller works for a one-shot sync: it
// reconciles only what the sync hands off, and the handoff waits for it
// (see rollout.Config.Once). Notifications go to notifier when it is not
// nil.
func wire(o *sourceOptions, log *slog.Logger, reg prometheus.Registerer, once bool, notifier *notify.Dispatcher) (*daemon, error) {
	d := &daemon{}
	src, err := o.newSource()
	if err != nil {
		return nil, err
	}
	windows, err := o.parseWindows()
	if err != nil {
		return nil, err
	}
	namespaces, err := o.parseWatchNamespaces()
	if err != nil {
		return nil, err
	}
	k, err := o.connect()
	if err != nil {
		return nil, err
	}
	restCfg, client, dyn, cached, mapper := k.rest, k.client, k.dynamic, k.discovery, k.mapper
	var watch *apply.Watch
	if !once {
		watch = apply.NewWatch(k.metadata, o.syncName, rollout.FieldManager)
	}
	statusNS := o.resolveStatusNamespace()
	clk := clock.RealClock{}

	var metrics *psync.Metrics
	var rolloutMetrics *rollout.Metrics
	if reg != nil {
		metrics, rolloutMetrics = psync.NewMetrics(reg), rollout.NewMetrics(reg)
	}
	measurer, err := o.measurer(client)
	if err != nil {
		return nil, err
	}
	var rolloutNotifier rollout.Notifier
	var syncNotifier psync.Notifier
	if notifier != nil {
		rolloutNotifier, syncNotifier = notify.NewRollouts(notifier.Send, clk), notify.NewSyncs(notifier.Send, clk)
	}
	rollouts := rollout.New(rollout.Config{Client: client, Log: log, SyncName: o.syncName, Namespaces: namespaces,
		Metrics: rolloutMetrics, Clock: clk, Once: once, Writable: d.writable, Measurer: measurer, Notifier: rolloutNotifier})
	charts, err := o.charts(restCfg, cached, log)
	if err != nil {
		return nil, err
	}
	decryption, err := o.decryption.decryptor(client)
	if err != nil {
		return nil, err
	}
	store := inventory.NewStore(client, statusNS, o.syncName)
	syncer := psync.New(psync.Config{
		Name:        o.syncName,
		Path:        o.path,
		Namespace:   o.namespace,
		Namespaces:  namespaces,
		Prune:       o.prune,
		AllowEmpty:  o.allowEmpty,
		Interval:    o.interval,
		Windows:     windows,
		HoldRewinds: o.holdRewinds,
		Source:      src,
		Applier:     apply.New(apply.Config{Dynamic: dyn, Mapper: mapper, Discovery: cached, SyncName: o.syncName}),
		Store:       store,
		Deployments: rollouts,
		Diffs:       rollouts,
		Events:      events.New(client, clk, log, psync.Component, events.Wait),
		Metrics:     metrics.For(o.syncName),
		Log:         log,
		Clock:       clk,
		Writable:    d.writable,
		Notifier:    syncNotifier,
		Watch:       watch,
		Charts:      charts,
		Decryption:  decryption,
		Hooks:       &helm.Hooks{Dynamic: dyn, Mapper: mapper, FieldManager: apply.DefaultFieldManager, Log: log},
	})
	d.syncer, d.rollouts, d.store, d.client, d.statusNamespace = syncer, rollouts, store, client, statusNS
	return d, nil
}

// cluster is the daemon's connection to the cluster: its clients, with
// its own rights, and the discovery of the kinds the cluster serves.
type cluster struct {
	rest      *rest.Config
	client    kubernetes.Interface
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	discovery discovery.CachedDiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
}

// connect builds the clients from the flags.
func (o *sourceOptions) connect() (*cluster, error) {
	restCfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(protobuf(restCfg))
	if err != nil {
		return nil, fmt.Errorf("build Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("build dynamic client: %w", err)
	}
	meta, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("build metadata client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("build discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(disc)
	return &cluster{rest: restCfg, client: client, dynamic: dyn, metadata: meta, discovery: cached,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

// charts builds the Helm chart renderer from the flags: fetched archives
// are kept under --cache-dir, capabilities come from the cluster's
// discovery, and lookup reads with the daemon's own rights.
func (o *sourceOptions) charts(restCfg *rest.Config, disc discovery.DiscoveryInterface, log *slog.Logger) (*helm.Renderer, error) {
	cfg, err := o.helmConfig()
	if err != nil {
		return nil, err
	}
	cfg.Namespace, cfg.Discovery, cfg.REST, cfg.Log = o.namespace, disc, restCfg, log
	return helm.New(cfg), nil
}

// helmConfig is what the chart renderers of every sync share, from the
// flags: the archives kept under --cache-dir, the registry credentials of
// --helm-credentials-file, the keys and keyless identity of
// --helm-verify-*.
func (o *sourceOptions) helmConfig() (helm.Config, error) {
	cfg := helm.Config{CacheDir: o.cacheDir}
	if o.helmCredentialsFile != "" {
		creds, err := helm.LoadCredentials(o.helmCredentialsFile)
		if err != nil {
			return helm.Config{}, fmt.Errorf("--helm-credentials-file: %w", err)
		}
		cfg.Credentials = creds
	}
	keys, err := o.helmVerify.read()
	if err != nil {
		return helm.Config{}, err
	}
	cfg.VerifyKeys = keys
	return cfg, nil
}
