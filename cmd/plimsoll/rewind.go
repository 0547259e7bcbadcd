package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/inventory"
)

// addHoldRewindsFlag adds --hold-rewinds, which run and sync --once take
// (diff does not: it shows what a sync would change, held or not).
func (o *sourceOptions) addHoldRewindsFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&o.holdRewinds, "hold-rewinds", false,
		"hold a branch head that does not descend from the commit applied (a force-push, a replay of an older commit) until a person accepts it with plimsoll accept-rewind or the "+
			contract.AnnotationAcceptRewind+" annotation on the sync's ConfigMap")
}

// newAcceptRewindCommand returns accept-rewind: it accepts the commit a
// sync holds as a rewind, as `kubectl annotate` of
// plimsoll.dev/accept-rewind does, after checking that the sync holds
// that very commit.
func newAcceptRewindCommand() *cobra.Command {
	o := &clusterOptions{}
	var syncName string
	cmd := &cobra.Command{
		Use:   "accept-rewind COMMIT",
		Short: "Accept the commit a sync holds as a rewind (--hold-rewinds), so that it is applied",
		Long: `Accept the commit a sync holds as a rewind, so that it is applied.

A daemon run with --hold-rewinds holds a branch head that does not descend
from the commit it applied last, and names both in its status. COMMIT is
the held commit (its full hash, or at least 7 of its hex digits); any
other commit, one pushed on top of it included, is refused. This sets
` + contract.AnnotationAcceptRewind + ` on the sync's ConfigMap (plimsoll-sync-<name>,
in --namespace), on the condition that the status is still the one read;
the daemon applies the commit at once and removes the annotation.`,
		Args: cobra.ExactArgs(1),
		RunE: o.runE(func(cmd *cobra.Command, args []string, client kubernetes.Interface, ns string) error {
			held, err := inventory.NewStore(client, ns, syncName).AcceptRewind(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "accepted commit %s for sync %s (%s=%s on configmap %s/%s%s)\n",
				revision.Short(held), syncName, contract.AnnotationAcceptRewind, held, ns, contract.NamePrefix, syncName)
			return nil
		}),
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&syncName, "sync-name", defaultSyncName, "the sync that holds the commit")
	cmd.Flag("namespace").Usage = "namespace of the sync's status ConfigMap (default: the context's, else default)"
	return cmd
}
