package main

import (
	"context"
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
			d, err := wire(o, log, nil)
			if err != nil {
				return err
			}
			return d.syncer.SyncOnce(ctx)
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "run one sync and exit")
	o.addFlags(cmd.Flags())
	return cmd
}
