package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"plimsoll.dev/plimsoll/internal/revision"
)

// errDiffers makes `plimsoll diff` exit 1: the cluster differs from Git.
var errDiffers = errors.New("the cluster differs from Git")

// diffExitError is the exit code of a diff that could not be computed, as
// kubectl diff's: 0 in sync, 1 differences, more for an error.
const diffExitError = 2

func newDiffCommand() *cobra.Command {
	o := &sourceOptions{}
	cmd := &cobra.Command{
		Use:   "diff --repo URL",
		Short: "Show what a sync of the branch head would change, as a unified diff per object; exit 1 when anything would",
		Args:  cobra.NoArgs,
		// Differences are not an error to print; real errors are printed
		// here, with the exit code kubectl diff uses.
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			failed := func(err error) error {
				fmt.Fprintln(cmd.ErrOrStderr(), "Error:", err)
				return exitCode(diffExitError, err)
			}
			log, err := o.newLogger()
			if err != nil {
				return failed(err)
			}
			d, err := wire(o, log, nil, false, nil)
			if err != nil {
				return failed(err)
			}
			head, diffs, err := d.syncer.Diff(ctx)
			if err != nil {
				return failed(err)
			}
			for _, diff := range diffs {
				fmt.Fprint(cmd.OutOrStdout(), diff.Diff)
			}
			if len(diffs) > 0 {
				objects := "objects"
				if len(diffs) == 1 {
					objects = "object"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%d %s would change to match commit %s\n", len(diffs), objects, revision.Short(head))
				return exitCode(1, errDiffers)
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}
