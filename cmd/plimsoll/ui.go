package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/internal/redact"
	"plimsoll.dev/plimsoll/ui"
)

// Defaults of the web view.
const (
	// defaultUIListen is where `plimsoll ui` serves: this machine only.
	defaultUIListen = "127.0.0.1:8090"
	// defaultDaemonUIListen is where the daemon serves its web view: its
	// own loopback (kubectl port-forward reaches it), never every
	// interface unless told.
	defaultDaemonUIListen = "127.0.0.1:8081"
)

// uiOptions are the web view's flags, shared by `ui` and `run`.
type uiOptions struct {
	listen string
	hosts  []string
}

func (o *uiOptions) addFlags(fs *pflag.FlagSet, prefix, listen, what string) {
	fs.StringVar(&o.listen, prefix+"listen", listen, "address of "+what)
	fs.StringSliceVar(&o.hosts, prefix+"host", nil, "host names the web view answers to besides IP addresses and localhost (a proxy's name; repeatable)")
}

func newUICommand() *cobra.Command {
	o := &clusterOptions{}
	uo := &uiOptions{}
	var all bool
	var repos []string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the read-only web view of the syncs and rollouts, with your kubeconfig's rights",
		Long: `Serve the read-only web view on this machine: the syncs, the workloads, and
each workload's steps, colors, revisions, pods, ready endpoints and analysis
runs, updated live. It reads with your kubeconfig's rights and shows only
what you may read; it changes nothing and never reads a Secret.

It reads every namespace when you may list Deployments in all of them (or
with -A), else the namespace of --namespace or your context.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			links, err := parseRepos(repos)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			client, ns, err := o.connect(ctx)
			if err != nil {
				return err
			}
			var namespaces []string
			if !all && (o.namespace != "" || !ui.ReadsEverywhere(ctx, client)) {
				namespaces = []string{ns}
			}
			ln, err := net.Listen("tcp", uo.listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", uo.listen, err)
			}
			where := "every namespace"
			if namespaces != nil {
				where = "namespace " + ns
			}
			fmt.Fprintf(cmd.OutOrStdout(), "plimsoll web view of %s on http://%s/ (read-only; interrupt to stop)\n", where, ln.Addr())
			return serveUI(ctx, ln, client, uo, ui.Config{Namespaces: namespaces, Repos: links}, nil)
		},
	}
	o.addFlags(cmd.Flags())
	uo.addFlags(cmd.Flags(), "", defaultUIListen, "the web view")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "read every namespace")
	cmd.Flags().StringArrayVar(&repos, "repo", nil, "NAME=URL: link the commits of sync NAME to the web pages of the repository at URL (repeatable)")
	return cmd
}

// serveUI serves the web view of cfg on ln until ctx ends, with client
// and the options' hosts; log, when set, gets its lines.
func serveUI(ctx context.Context, ln net.Listener, client kubernetes.Interface, o *uiOptions, cfg ui.Config, log *slog.Logger) error {
	cfg.Client, cfg.Hosts, cfg.Log = client, o.hosts, log
	s, err := ui.New(cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// parseRepos reads --repo NAME=URL flags.
func parseRepos(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		name, url, ok := strings.Cut(f, "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("--repo %q: want NAME=URL, the sync's name and its repository's address", redact.Text(f))
		}
		out[name] = url
	}
	return out, nil
}

// startDaemonUI serves the daemon's web view on --ui-listen until ctx
// ends, reading what the daemon reads. The default address is tried and
// let go when it is taken (another daemon on this machine serves its
// view there); an address given with the flag must be had.
func (o *runOptions) startDaemonUI(ctx context.Context, client kubernetes.Interface, log *slog.Logger, explicit bool) error {
	if o.ui.listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", o.ui.listen)
	if err != nil {
		if explicit {
			return fmt.Errorf("listen on --ui-listen %s: %w", o.ui.listen, err)
		}
		log.Warn("web view not served: its default address is taken; give --ui-listen", "addr", o.ui.listen, "err", err)
		return nil
	}
	cfg := ui.Config{Namespaces: o.watchNamespaces, Repos: map[string]string{o.syncName: o.repo},
		Windows: map[string][]string{o.syncName: o.windows}, Idle: ui.DefaultIdle}
	if len(cfg.Namespaces) == 0 {
		cfg.Namespaces = []string{metav1.NamespaceAll}
	}
	log.Info("serving the web view", "addr", ln.Addr().String())
	go func() {
		if err := serveUI(ctx, ln, client, &o.ui, cfg, log); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("serve the web view", "err", err)
		}
	}()
	return nil
}
