package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	gosync "sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/daemon/fleet"
	"plimsoll.dev/plimsoll/daemon/shard"
	"plimsoll.dev/plimsoll/internal/events"
	"plimsoll.dev/plimsoll/notify"
	"plimsoll.dev/plimsoll/rollout"
	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/declare"
	"plimsoll.dev/plimsoll/sync/helm"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/source"
)

// Keys of a declared sync's credentials Secret.
const (
	credentialUsername   = "username"
	credentialPassword   = "password"
	credentialToken      = "token"
	credentialIdentity   = "identity"
	credentialPassphrase = "passphrase"
	credentialKnownHosts = "known_hosts"
)

// many is a daemon of many syncs, wired: the sync of the flags and every
// declared one, in one fleet, spread over the replicas by the keeper.
type many struct {
	o        *runOptions
	k        *cluster
	log      *slog.Logger
	clock    clock.Clock
	statusNS string
	// namespaces is --watch-namespace, checked.
	namespaces []string

	rollouts *rollout.Controller
	fleet    *fleet.Fleet
	declared *fleet.Declared
	keeper   *shard.Keeper
	watches  *apply.Watches
	checker  *declare.Checker
	metrics  *psync.Metrics
	events   *events.Recorder
	notifier psync.Notifier

	mu identities
}

// identities are the clients of the declared syncs' identities, by sync.
type identities struct {
	gosync.Mutex
	clients map[string]kubernetes.Interface
}

// clientFor is the client the rollout controller writes a sync's
// workloads with: its identity's; nil (the daemon's own) for the sync of
// the flags.
func (m *many) clientFor(name string) kubernetes.Interface {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.clients[name]
}

// wireMany builds a daemon of many syncs from the flags.
func (o *runOptions) wireMany(log *slog.Logger, reg prometheus.Registerer, notifier *notify.Dispatcher) (*many, error) {
	if o.leaderElect {
		return nil, errors.New("--leader-elect does not go with --syncs-namespace: the replicas share the syncs, each holding the Leases of its own")
	}
	namespaces, err := o.parseWatchNamespaces()
	if err != nil {
		return nil, err
	}
	k, err := o.connect()
	if err != nil {
		return nil, err
	}
	clk := clock.RealClock{}
	m := &many{o: o, k: k, log: log, clock: clk, statusNS: o.resolveStatusNamespace(), namespaces: namespaces,
		watches: apply.NewWatches(k.metadata, rollout.FieldManager), checker: &declare.Checker{Client: k.client, Where: o.syncsNamespace},
		events: events.New(k.client, clk, log, psync.Component, events.Wait), mu: identities{clients: map[string]kubernetes.Interface{}}}
	var rolloutMetrics *rollout.Metrics
	if reg != nil {
		m.metrics, rolloutMetrics = psync.NewMetrics(reg), rollout.NewMetrics(reg)
	}
	measurer, err := o.measurer(k.client)
	if err != nil {
		return nil, err
	}
	var rolloutNotifier rollout.Notifier
	if notifier != nil {
		rolloutNotifier, m.notifier = notify.NewRollouts(notifier.Send, clk), notify.NewSyncs(notifier.Send, clk)
	}
	m.keeper = shard.New(shard.Config{Client: k.client, Namespace: m.statusNS, Identity: identity(),
		Syncs: func() []string { return m.fleet.Names() }, Gained: m.gained, Log: log})
	m.fleet = fleet.New(fleet.Config{Workers: o.syncWorkers, Owner: m.keeper, Log: log})
	m.rollouts = rollout.New(rollout.Config{Client: k.client, Log: log, Namespaces: namespaces, Metrics: rolloutMetrics, Clock: clk,
		Measurer: measurer, Notifier: rolloutNotifier, Owns: m.keeper.Hold, ClientFor: m.clientFor})
	m.declared = fleet.NewDeclared(fleet.DeclaredConfig{Client: k.client, Namespace: o.syncsNamespace, Fleet: m.fleet,
		Build: m.buildDeclared, Log: log})
	root, err := m.buildRoot()
	if err != nil {
		return nil, err
	}
	m.fleet.Put(o.syncName, root, o.interval)
	return m, nil
}

// runMany runs a daemon of many syncs (--syncs-namespace): its endpoints
// answer for all of them, and a push hook polls every repository.
func (o *runOptions) runMany(ctx context.Context, log *slog.Logger, reg *prometheus.Registry, notifier *notify.Dispatcher,
	secret []byte, uiExplicit bool) error {
	m, err := o.wireMany(log, reg, notifier)
	if err != nil {
		return err
	}
	hook := func() {
		log.Info("webhook received; polling every repository now")
		m.fleet.PollRepos()
	}
	stop, err := o.startServing(ctx, reg, secret, log, m.readiness, hook, m.k.client, uiExplicit)
	if err != nil {
		return err
	}
	defer stop()
	log.Info("plimsoll starting", append(append([]any{"version", version, "commit", commit}, o.sourceAttrs()...),
		"path", o.path, "sync", o.syncName, "statusNamespace", m.statusNS, "syncsNamespace", o.syncsNamespace, "workers", o.syncWorkers)...)
	return m.run(ctx)
}

// gained picks a sync up on this replica: its workloads' rollouts where
// their annotations say they are, then its polls. The rollouts come
// first: QueueSync forgets what the controller held of the sync from
// before, which must not be what the sync's first poll hands off.
func (m *many) gained(name string) {
	m.rollouts.QueueSync(name)
	m.fleet.Owned(name)
}

// run runs the fleet until ctx ends: the rollout controller, the
// declarations, then (once they are read, so that every replica spreads
// the same syncs) the keeper, the fleet and the requests on the records.
func (m *many) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg gosync.WaitGroup
	errs := make(chan error, 4)
	for _, run := range []func(context.Context) error{m.rollouts.Run, m.declared.Run} {
		wg.Go(func() { errs <- run(ctx) })
	}
	select {
	case <-m.declared.Synced():
	case err := <-errs:
		cancel()
		wg.Wait()
		return err
	}
	for _, run := range []func(context.Context) error{m.keeper.Run, m.fleet.Run} {
		wg.Go(func() { errs <- run(ctx) })
	}
	go inventory.WatchAllRequests(ctx, m.k.client, m.statusNS, func(name string) {
		m.log.Info("sync requested on the sync record; syncing now", "sync", name)
		m.fleet.Trigger(name)
	})
	err := <-errs
	cancel()
	wg.Wait()
	return err
}

// readiness answers /readyz: ready once the declarations are read and the
// rollout controller's caches filled.
func (m *many) readiness() (string, bool) {
	select {
	case <-m.declared.Synced():
	default:
		return "the sync declarations are not read yet", false
	}
	select {
	case <-m.rollouts.Started():
	default:
		return "the rollout controller's caches are not filled yet", false
	}
	return "ok", true
}

// buildRoot builds the sync of the flags: it writes as the daemon, and
// checks the syncs its commits declare.
func (m *many) buildRoot() (*fleet.Sync, error) {
	o := m.o
	repo, err := m.rootRepo()
	if err != nil {
		return nil, err
	}
	windows, err := o.parseWindows()
	if err != nil {
		return nil, err
	}
	charts, err := o.charts(m.k.rest, m.k.discovery, m.log)
	if err != nil {
		return nil, err
	}
	decryption, err := o.decryption.decryptor(m.k.client)
	if err != nil {
		return nil, err
	}
	syncer := m.syncer(psync.Config{Name: o.syncName, Path: o.path, Namespace: o.namespace, Prune: o.prune, AllowEmpty: o.allowEmpty,
		Interval: o.interval, Windows: windows, HoldRewinds: o.holdRewinds, Source: repo.Source(), Charts: charts, Decryption: decryption,
		Applier: apply.New(apply.Config{Dynamic: m.k.dynamic, Mapper: m.k.mapper, Discovery: m.k.discovery, SyncName: o.syncName}),
		Hooks:   &helm.Hooks{Dynamic: m.k.dynamic, Mapper: m.k.mapper, FieldManager: apply.DefaultFieldManager, Log: m.log}})
	return &fleet.Sync{Syncer: syncer, Repo: repo}, nil
}

// buildDeclared builds a declared sync: every write it makes (applies,
// prunes, hooks, rollouts) impersonates its ServiceAccount, which must be
// one the daemon may use; it reads with the daemon's rights; its Git
// credentials are read from its Secret before each poll of its
// repository.
func (m *many) buildDeclared(_ context.Context, spec *declare.Spec) (*fleet.Sync, error) {
	o := m.o
	as := rest.CopyConfig(m.k.rest)
	as.Impersonate = rest.ImpersonationConfig{UserName: spec.ServiceAccount.UserName()}
	writes, err := dynamic.NewForConfig(as)
	if err != nil {
		return nil, fmt.Errorf("build the client of ServiceAccount %s: %w", spec.ServiceAccount, err)
	}
	typed, err := kubernetes.NewForConfig(protobuf(as))
	if err != nil {
		return nil, fmt.Errorf("build the client of ServiceAccount %s: %w", spec.ServiceAccount, err)
	}
	key := declaredKey(spec)
	repo := m.fleet.Repo(key, m.opener(spec, filepath.Join(o.cacheDir, repoDirName(key))))
	namespace := spec.Namespace
	if namespace == "" {
		namespace = o.namespace
	}
	charts, err := o.helmConfig()
	if err != nil {
		return nil, err
	}
	charts.Namespace, charts.Discovery, charts.REST, charts.Log = namespace, m.k.discovery, as, m.log
	interval := spec.Interval
	if interval == 0 {
		interval = o.interval
	}
	syncer := m.syncer(psync.Config{Name: spec.Name, Path: spec.Path, Namespace: namespace, Prune: spec.Prune, Interval: interval,
		Windows: spec.Windows, Source: repo.Source(), Decryption: declaredDecryptor(m.k.client, o.syncsNamespace, spec.Decryption),
		Charts:  helm.New(charts),
		Applier: apply.New(apply.Config{Dynamic: writes, Reads: m.k.dynamic, Mapper: m.k.mapper, Discovery: m.k.discovery, SyncName: spec.Name}),
		Hooks:   &helm.Hooks{Dynamic: writes, Mapper: m.k.mapper, FieldManager: apply.DefaultFieldManager, Log: m.log}})
	m.mu.Lock()
	m.mu.clients[spec.Name] = typed
	m.mu.Unlock()
	return &fleet.Sync{Syncer: syncer, Repo: repo, Prepare: func(ctx context.Context) error {
		return m.checker.CheckIdentity(ctx, spec.ServiceAccount, nil)
	}}, nil
}

// syncer completes cfg with what every sync of the fleet shares, and
// builds its Syncer.
func (m *many) syncer(cfg psync.Config) *psync.Syncer {
	cfg.Namespaces = m.namespaces
	cfg.Store = inventory.NewStore(m.k.client, m.statusNS, cfg.Name)
	sink := m.rollouts.ForSync(cfg.Name)
	cfg.Deployments, cfg.Diffs = sink, sink
	cfg.Events = m.events
	cfg.Metrics = m.metrics.For(cfg.Name)
	cfg.Log = m.log
	cfg.Clock = m.clock
	cfg.Notifier = m.notifier
	cfg.Watch = m.watches.For(cfg.Name)
	cfg.Declarations = m.checker
	return psync.New(cfg)
}

// opener builds the repository of a declared sync in dir, with the
// credentials of its Secret, read again before each poll: a Secret
// rotated is used from the next poll on.
func (m *many) opener(spec *declare.Spec, dir string) fleet.Opener {
	return func(ctx context.Context, version string) (psync.Source, string, error) {
		auth, current := source.Auth{}, "none"
		var data map[string][]byte
		if spec.Credentials != "" {
			secret, err := m.k.client.CoreV1().Secrets(m.o.syncsNamespace).Get(ctx, spec.Credentials, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("read the credentials of sync %s: Secret %s/%s does not exist", spec.Name, m.o.syncsNamespace, spec.Credentials)
			}
			if err != nil {
				return nil, "", fmt.Errorf("read the credentials of sync %s from Secret %s/%s: %w", spec.Name, m.o.syncsNamespace, spec.Credentials, err)
			}
			auth, current, data = authOf(secret), secret.ResourceVersion, secret.Data
		}
		if current == version {
			return nil, version, nil
		}
		if spec.OCI != nil {
			src, err := m.openArtifact(spec, data)
			if err != nil {
				return nil, "", err
			}
			return src, current, nil
		}
		repo, err := source.New(source.Config{URL: spec.Repository, Branch: spec.Branch, Auth: auth, Timeout: m.o.gitTimeout, Dir: dir,
			Keyring: spec.Keyring, AllowedSigners: spec.AllowedSigners})
		if err != nil {
			return nil, "", fmt.Errorf("open the repository of sync %s: %w", spec.Name, err)
		}
		return repo, current, nil
	}
}

// authOf reads Git credentials from a Secret: username and password, or a
// token, for HTTPS; identity (a private key), known_hosts and a
// passphrase for SSH.
func authOf(s *corev1.Secret) source.Auth {
	get := func(key string) string { return string(s.Data[key]) }
	auth := source.Auth{Username: get(credentialUsername), Password: get(credentialPassword),
		SSHKey: s.Data[credentialIdentity], SSHKeyPassphrase: get(credentialPassphrase), KnownHosts: s.Data[credentialKnownHosts]}
	if token := get(credentialToken); token != "" {
		auth.Password = token
	}
	return auth
}

// repoDirName names the clone of a repository key: a digest, so that the
// URL is not spelled out on disk, and each key has its own.
func repoDirName(key fleet.RepoKey) string {
	return cloneDirName(key.URL, key.Branch+"\x00"+key.Credentials+"\x00"+key.Verify)
}

// keysDigest tells apart the verification keys of files, by name.
func keysDigest(files ...string) string { return textDigest(files...) }

// textDigest is a short digest of texts, "" when all are empty.
func textDigest(texts ...string) string {
	empty := true
	h := sha256.New()
	for _, t := range texts {
		empty = empty && t == ""
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	if empty {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
