package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func newSyncCommand() *cobra.Command {
	o := &sourceOptions{}
	var once bool
	cmd := &cobra.Command{
		Use:   "sync --once --repo URL",
		Short: "Sync the branch head to the cluster once; exit 0 only on success",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !once {
				return fmt.Errorf("sync runs one sync and needs --once; use `plimsoll run` for the daemon")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log, err := o.newLogger()
			if err != nil {
				return err
			}
			d, err := wire(o, log, nil, true)
			if err != nil {
				return err
			}
			return d.syncOnce(ctx)
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "run one sync and exit")
	o.addFlags(cmd.Flags())
	return cmd
}

// syncOnce runs one sync with the rollout controller running beside it, so
// that the Deployments it hands over are rolled out from the controller's
// caches; the controller stops (its Events written) before it returns.
func (d *daemon) syncOnce(ctx context.Context) error {
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
	cancel()
	return errors.Join(err, <-stopped)
}
