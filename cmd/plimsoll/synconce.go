package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/rollout"
	"plimsoll.dev/plimsoll/strategies"
)

// Defaults of sync --once --wait.
const (
	// defaultWaitTimeout bounds --wait: a canary with the default steps
	// (two 30s pauses) ends well within it.
	defaultWaitTimeout = 10 * time.Minute
	// waitLook is how often --wait looks at the rollouts.
	waitLook = 500 * time.Millisecond
)

func newSyncCommand() *cobra.Command {
	o := &sourceOptions{}
	no := &notifyOptions{}
	var once, waitRollouts bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync --once --repo URL [--wait [--timeout D]]",
		Short: "Sync the branch head to the cluster once; exit 0 only on success",
		Long: `Sync the branch head to the cluster once; exit 0 only on success.

With --wait, also wait until the rollout of every workload of the commit
has ended, printing one line per workload as it ends; exit 0 only if all
are Healthy. A timeout exits non-zero, naming the workloads still rolling.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !once {
				return fmt.Errorf("sync runs one sync and needs --once; use `plimsoll run` for the daemon")
			}
			if cmd.Flags().Changed("timeout") && !waitRollouts {
				return fmt.Errorf("--timeout bounds --wait; give --wait too")
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: want a positive duration", timeout)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log, err := o.newLogger()
			if err != nil {
				return err
			}
			notifier, err := no.dispatcher(log, nil)
			if err != nil {
				return err
			}
			defer stopNotifying(notifier)
			d, err := wire(o, log, nil, true, notifier)
			if err != nil {
				return err
			}
			if !waitRollouts {
				return d.syncOnce(ctx, nil)
			}
			return d.syncOnce(ctx, func(ctx context.Context) error {
				return waitForRollouts(ctx, d.rollouts, cmd.OutOrStdout(), timeout)
			})
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "run one sync and exit")
	cmd.Flags().BoolVar(&waitRollouts, "wait", false, "also wait until every workload of the commit is Healthy or Degraded")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultWaitTimeout, "how long --wait waits")
	o.addFlags(cmd.Flags())
	o.addHoldRewindsFlag(cmd.Flags())
	no.addFlags(cmd.Flags())
	return cmd
}

// syncOnce runs one sync with the rollout controller running beside it, so
// that the Deployments it hands off are rolled out from the controller's
// caches; then, when the sync succeeded and after is set, after (with
// the controller still running). The controller stops (its Events
// written) before it returns.
func (d *daemon) syncOnce(ctx context.Context, after func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- d.rollouts.Run(ctx) }()
	select {
	case <-d.rollouts.Started():
	case err := <-stopped:
		cancel()
		return err
	}
	err := d.syncer.SyncOnce(ctx)
	if err == nil && after != nil {
		err = after(ctx)
	}
	cancel()
	return errors.Join(err, <-stopped)
}

// waitForRollouts follows the rollouts of the workloads the sync handed
// over until each has ended, printing a line for each as it ends: the
// controller follows them as a daemon would (see rollout.Controller.Follow).
// It fails when one ended Degraded, or when timeout passes first, naming
// the workloads still rolling.
func waitForRollouts(ctx context.Context, rollouts *rollout.Controller, out io.Writer, timeout time.Duration) error {
	rollouts.Follow()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	look := time.NewTicker(waitLook)
	defer look.Stop()
	told := map[string]bool{}
	for {
		outcomes := rollouts.Outcomes()
		var rolling, degraded []string
		for _, o := range outcomes {
			key := o.Namespace + "/" + o.Name
			if o.Kind != "" {
				key = contract.SetTemplateKey(o.Kind, o.Namespace, o.Name)
			}
			switch {
			case !o.Ended:
				rolling = append(rolling, key)
				continue
			case o.Phase == strategies.PhaseDegraded:
				degraded = append(degraded, key)
			}
			if !told[key] {
				told[key] = true
				fmt.Fprintf(out, "%s %s: %s\n", key, o.Phase, o.Message)
			}
		}
		switch {
		case len(rolling) == 0 && len(degraded) > 0:
			return fmt.Errorf("%d of %d workloads ended Degraded: %s", len(degraded), len(outcomes), strings.Join(degraded, ", "))
		case len(rolling) == 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the rollouts: %w", ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("timed out after %s waiting for %d workloads still rolling: %s", timeout, len(rolling), strings.Join(rolling, ", "))
		case <-look.C:
		}
	}
}
