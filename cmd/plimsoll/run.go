package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/daemon/fleet"
	"plimsoll.dev/plimsoll/daemon/webhook"
	psync "plimsoll.dev/plimsoll/sync"
)

// Lease and serving timings.
const (
	// With --leader-elect a standby waits to take over from a leader that
	// crashed: the Lease lasts 15 s and is renewed every 2 s, as
	// kube-controller-manager's.
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
	// Without it no standby waits (see runExclusive): the Lease only keeps
	// a second daemon from writing, and a crashed holder's successor is a
	// restart in place (taken over at once) or a new pod, which a node's
	// failure takes far longer than 35 s to bring. It is renewed every
	// 5 s, as Flux's controllers renew theirs: 12 writes a minute where 2 s
	// made 30, about a third of an idle daemon's CPU (sampled over 60
	// idle seconds with 20 workloads Healthy and a poll every 2 s).
	exclusiveLeaseDuration = 35 * time.Second
	exclusiveRenewDeadline = 30 * time.Second
	exclusiveRetryPeriod   = 5 * time.Second
	shutdownTimeout        = 5 * time.Second
	// requestTimeout bounds a standby's write that passes a hook on.
	requestTimeout = 5 * time.Second
	// daemonGCPercent is the daemon's GOGC when the environment sets
	// none: the Go heap may grow to 1.25 times what is live between
	// collections, not to twice. At N=300 rollouts about 50 MiB is live
	// as a commit's sync meets the controller's caches, so the heap's
	// peak goal falls from ~100 to ~62 MiB, for collections four times
	// as often (docs/architecture.md, "Memory").
	daemonGCPercent = 25
)

type runOptions struct {
	sourceOptions
	notify            notifyOptions
	listen            string
	ui                uiOptions
	webhookSecretFile string
	leaderElect       bool
	// syncsNamespace is --syncs-namespace: where sync declarations are
	// taken from; "" for a daemon of one sync.
	syncsNamespace string
	// syncWorkers is --sync-workers.
	syncWorkers int
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --repo URL",
		Short: "Run the daemon: poll the repository and keep the cluster in sync",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.Flags().Changed("ui-listen"))
		},
	}
	o.addFlags(cmd.Flags())
	o.addHoldRewindsFlag(cmd.Flags())
	o.notify.addFlags(cmd.Flags())
	cmd.Flags().DurationVar(&o.interval, "interval", psync.DefaultInterval, "how often to poll the repository")
	cmd.Flags().StringVar(&o.listen, "listen", defaultListen, "address of /healthz, /readyz, /metrics and POST /hook; empty to disable")
	cmd.Flags().StringVar(&o.webhookSecretFile, "webhook-secret-file", "", "file holding the webhook secret; /hook is disabled without it")
	cmd.Flags().BoolVar(&o.leaderElect, "leader-elect", false, "act only while holding the leader Lease (for more than one replica)")
	cmd.Flags().StringVar(&o.syncsNamespace, "syncs-namespace", "", "take sync declarations (ConfigMaps labelled plimsoll.dev/sync-declaration) from this namespace, and serve them beside the sync of the flags; the replicas share the syncs (default: one sync, no declarations)")
	cmd.Flags().IntVar(&o.syncWorkers, "sync-workers", fleet.DefaultWorkers, "with --syncs-namespace, how many syncs poll at once")
	o.ui.addFlags(cmd.Flags(), "ui-", defaultDaemonUIListen, "the read-only web view; empty to disable")
	return cmd
}

// run runs the daemon; uiExplicit says --ui-listen was given.
func (o *runOptions) run(ctx context.Context, uiExplicit bool) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(daemonGCPercent)
	}
	log, err := o.newLogger()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	notifier, err := o.notify.dispatcher(log, reg)
	if err != nil {
		return err
	}
	defer stopNotifying(notifier)
	secret, err := o.webhookSecret()
	if err != nil {
		return err
	}
	if o.syncsNamespace != "" {
		return o.runMany(ctx, log, reg, notifier, secret, uiExplicit)
	}
	d, err := wire(&o.sourceOptions, log, reg, false, notifier)
	if err != nil {
		return err
	}
	stop, err := o.startServing(ctx, reg, secret, log, d.readiness, d.hook(log), d.client, uiExplicit)
	if err != nil {
		return err
	}
	defer stop()
	log.Info("plimsoll starting", append(append([]any{"version", version, "commit", commit}, o.sourceAttrs()...),
		"path", o.path, "sync", o.syncName, "statusNamespace", d.statusNamespace)...)
	if !o.leaderElect {
		return o.runExclusive(ctx, d, log)
	}
	return o.runAsLeader(ctx, d, log)
}

// startServing starts the endpoints of --listen (see serve) and the web
// view of --ui-listen, reading the cluster with client; stop stops both.
func (o *runOptions) startServing(ctx context.Context, reg *prometheus.Registry, secret []byte, log *slog.Logger,
	ready func() (string, bool), hook func(), client kubernetes.Interface, uiExplicit bool) (stop func(), err error) {
	uiCtx, stopUI := context.WithCancel(ctx)
	var srv *http.Server
	stop = func() {
		stopUI()
		if srv != nil {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		}
	}
	if o.listen != "" {
		var addr string
		if srv, addr, err = serve(o.listen, reg, secret, log, ready, hook); err != nil {
			stopUI()
			return nil, err
		}
		log.Info("serving", "addr", addr, "webhook", secret != nil)
	}
	if err := o.startDaemonUI(uiCtx, client, log, uiExplicit); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// run runs the rollout controller and the syncer until ctx ends or one of
// them fails.
func (d *daemon) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- d.rollouts.Run(ctx) }()
	go func() { errs <- d.syncer.Run(ctx) }()
	err := <-errs
	cancel()
	return errors.Join(err, <-errs)
}

// webhookSecret reads --webhook-secret-file; nil without it.
func (o *runOptions) webhookSecret() ([]byte, error) {
	if o.webhookSecretFile == "" {
		return nil, nil
	}
	v, err := secretFrom(o.webhookSecretFile, "", "webhook secret")
	if err != nil {
		return nil, err
	}
	if v == "" {
		return nil, fmt.Errorf("webhook secret file %s is empty", o.webhookSecretFile)
	}
	return []byte(v), nil
}

// readiness answers /readyz: ready once the first sync was attempted, and
// on a standby; not while another daemon holds the sync.
func (d *daemon) readiness() (string, bool) {
	if d.standby.Load() {
		return "ok: standby", true
	}
	if !d.writable() {
		return d.blocked(), false
	}
	select {
	case <-d.syncer.Ready():
		return "ok", true
	default:
		return "first sync not attempted yet", false
	}
}

// hook is what a good push hook does: a sync now, or, on a daemon that
// does not hold the sync, a request to its holder.
func (d *daemon) hook(log *slog.Logger) func() {
	return func() {
		if !d.standby.Load() && d.writable() {
			log.Info("webhook received; syncing now")
			d.syncer.Trigger()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		if err := d.store.Request(ctx, time.Now()); err != nil {
			log.Error("pass the webhook on to the leader", "err", err)
			return
		}
		log.Info("webhook received by a daemon that does not hold the sync; sync requested from its holder")
	}
}

// serve starts the HTTP endpoints and returns the server and the address
// it listens on. ready answers /readyz; hook is what a good push hook
// does.
func serve(addr string, reg *prometheus.Registry, secret []byte, log *slog.Logger, ready func() (string, bool), hook func()) (*http.Server, string, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		text, ok := ready()
		if !ok {
			http.Error(w, text, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(text + "\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if secret != nil {
		mux.Handle("/hook", webhook.Handler(secret, hook))
	} else {
		mux.HandleFunc("/hook", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "webhook not configured (--webhook-secret-file)", http.StatusNotFound)
		})
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux}
	webhook.ServerTimeouts(srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve HTTP", "err", err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// runAsLeader runs the syncer only while this process holds the Lease
// plimsoll-<sync name> in the status namespace.
func (o *runOptions) runAsLeader(ctx context.Context, d *daemon, log *slog.Logger) error {
	id := identity()
	lock := o.leaseLock(d, id)
	var runErr error
	d.standby.Store(true)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            contract.LeasePrefix + o.syncName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("became leader", "identity", id)
				d.standby.Store(false)
				runErr = d.run(ctx)
			},
			OnStoppedLeading: func() { log.Info("stopped leading", "identity", id) },
		},
	})
	return runErr
}
