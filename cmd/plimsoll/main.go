// Command plimsoll is a GitOps daemon: it polls a Git repository of
// Kubernetes manifests, applies them safely, and drives every Deployment it
// syncs through an embedded rollout controller.
//
// This package holds flags, wiring and subcommands only; the behaviour lives
// in the sync, rollout and strategies packages.
package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		// cobra has already printed the error and, for flag errors, usage.
		var exit *exitError
		if errors.As(err, &exit) {
			os.Exit(exit.code)
		}
		os.Exit(1)
	}
}

// exitError is an error that ends the command with its own exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode makes err end the command with code.
func exitCode(code int, err error) error { return &exitError{code: code, err: err} }

// newRootCommand builds the plimsoll command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:          "plimsoll",
		Short:        "GitOps daemon with an embedded rollout controller",
		SilenceUsage: true,
	}
	root.AddCommand(newVersionCommand(), newRunCommand(), newSyncCommand(), newDiffCommand(), newStatusCommand(), newTraceCommand(), newWaitCommand(), newUICommand())
	root.AddCommand(newAcceptRewindCommand())
	root.AddCommand(newRolloutCommands()...)
	return root
}
