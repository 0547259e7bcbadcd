package main

import (
	"errors"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/workload"
)

// Exit codes of plimsoll wait: a failed rollout or commit exits 1, as any
// error does.
const exitWaitTimeout = 2

func newWaitCommand() *cobra.Command {
	o := &clusterOptions{}
	cfg := workload.WaitConfig{}
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "wait WORKLOAD... [--commit SHA] [--timeout 10m] | wait --all --sync-name NAME",
		Short: "Wait until workloads are Healthy on the templates of a commit; for CI after a git push",
		Long: `Wait until each workload runs the template of a commit and is Healthy there,
printing a line for each as it ends. The commit is --commit, or the commit
the workload's sync had applied when the wait began; a Healthy status from
before the sync applied it (the previous revision's) never ends the wait.
With --all, wait for every workload of the sync --sync-name.

Exits 0 once every workload is Healthy; 1 at once when one is Degraded (its
revision failed, or the commit's template is the one that failed) or the
sync could not apply the commit; 2 when --timeout passes first, naming the
workloads still rolling and where each stands.

Unlike kubectl rollout status, it knows a canary paused at a step or a
blue-green revision waiting for its swap from a finished rollout.`,
		PreRunE: func(_ *cobra.Command, args []string) error {
			cfg.Names = args
			if allNamespaces && !cfg.All {
				return errors.New("-A reads every namespace for --all; named workloads are in --namespace")
			}
			return cfg.Validate()
		},
		RunE: o.runE(func(cmd *cobra.Command, _ []string, client kubernetes.Interface, ns string) error {
			cfg.Namespace, cfg.Out = ns, cmd.OutOrStdout()
			if allNamespaces {
				cfg.Namespace = metav1.NamespaceAll
			}
			err := workload.Wait(cmd.Context(), client, cfg)
			if errors.Is(err, workload.ErrWaitTimeout) {
				return exitCode(exitWaitTimeout, err)
			}
			return err
		}),
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&cfg.Commit, "commit", "", "the commit to wait for, in full or its first 7 or more characters (default: the sync's applied commit)")
	cmd.Flags().DurationVar(&cfg.Timeout, "timeout", defaultWaitTimeout, "how long to wait")
	cmd.Flags().BoolVar(&cfg.All, "all", false, "wait for every workload of the sync --sync-name")
	cmd.Flags().StringVar(&cfg.SyncName, "sync-name", "", "the sync of --all")
	cmd.Flags().StringVar(&cfg.StatusNamespace, "status-namespace", "", "namespace of the syncs' status ConfigMaps (default: the workload's, else wherever the sync's is)")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "with --all, the sync's workloads of every namespace")
	return cmd
}
