// Command plimsoll is a GitOps daemon: it polls a Git repository of
// Kubernetes manifests, applies them safely, and drives every Deployment it
// syncs through an embedded rollout controller.
//
// This package holds flags, wiring and subcommands only; the behaviour lives
// in the sync, rollout and strategies packages.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		// cobra has already printed the error and, for flag errors, usage.
		os.Exit(1)
	}
}

// newRootCommand builds the plimsoll command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:          "plimsoll",
		Short:        "GitOps daemon with an embedded rollout controller",
		SilenceUsage: true,
	}
	root.AddCommand(newVersionCommand(), newRunCommand(), newSyncCommand(), newStatusCommand(), newTraceCommand())
	root.AddCommand(newRolloutCommands()...)
	return root
}
