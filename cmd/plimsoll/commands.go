package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/workload"
)

// commandHelp says what each rollout command does, for its --help.
var commandHelp = map[string]string{
	contract.CommandPromote: "Promote a blue-green or canary rollout: swap now, or move on a step",
	contract.CommandAbort:   "Abort a blue-green or canary rollout: traffic back on the previous revision",
	contract.CommandRetry:   "Retry a failed revision: clear the failed hash so the Git template goes out again",
	contract.CommandPause:   "Pause a rollout where it is",
	contract.CommandResume:  "Resume a paused rollout",
}

// newRolloutCommands returns promote, abort, retry, pause and resume: each
// sets plimsoll.dev/command on the workload's primary Deployment and prints
// what the controller did.
func newRolloutCommands() []*cobra.Command {
	var cmds []*cobra.Command
	for _, name := range []string{contract.CommandPromote, contract.CommandAbort, contract.CommandRetry, contract.CommandPause, contract.CommandResume} {
		o := &clusterOptions{}
		cmd := &cobra.Command{
			Use:   name + " WORKLOAD",
			Short: commandHelp[name],
			Args:  cobra.ExactArgs(1),
			RunE: o.runE(func(cmd *cobra.Command, args []string, client kubernetes.Interface, ns string) error {
				said, err := workload.SendCommand(cmd.Context(), client, ns, args[0], name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], said)
				return nil
			}),
		}
		o.addFlags(cmd.Flags())
		cmds = append(cmds, cmd)
	}
	return cmds
}
