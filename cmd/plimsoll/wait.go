package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/workload"
)

func newWaitCommand() *cobra.Command {
	o := &clusterOptions{}
	cfg := workload.WaitConfig{}
	git := &sourceOptions{}
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "wait WORKLOAD... [--commit SHA] [--timeout 10m] [--repo URL] | wait --all --sync-name NAME",
		Short: "Wait until workloads are Healthy on the templates of a commit; for CI after a git push",
		Long: `Wait until each workload runs the template of a commit and is Healthy there,
printing a line for each as it ends. The commit is --commit, or the commit
the workload's sync had applied when the wait began; a Healthy status from
before the sync applied it (the previous revision's) never ends the wait.
With --all, wait for every workload of the sync --sync-name.

With --repo, the sync's repository, a commit that a descendant replaced
(pushed before it was applied, or while its rollout went on) is waited
for on that descendant: the wait ends 0 once the workloads are Healthy
there, and says so; one that a history without it replaced (a
force-push, a rewind) ends the wait at once. Without --repo, the wait
cannot tell the two apart, and goes on for the awaited commit.

Exits 0 once every workload is Healthy; 1 at once when one is Degraded (its
revision failed, or the commit's template is the one that failed) or the
sync could not apply the commit; 2 when --timeout passes first, naming the
workloads still rolling and where each stands; 3 at once when a named
workload has no Deployment and the commit its sync applied (the awaited
one, or one that contains it) has none either; 4 at once when the
awaited commit is no longer on the branch and the commit that replaced it
does not contain it (with --repo).

Unlike kubectl rollout status, it knows a canary paused at a step or a
blue-green revision waiting for its swap from a finished rollout.`,
		PreRunE: func(_ *cobra.Command, args []string) error {
			cfg.Names = args
			switch {
			case allNamespaces && !cfg.All:
				return errors.New("-A reads every namespace for --all; named workloads are in --namespace")
			case git.repo != "" && cfg.Commit != "" && len(cfg.Commit) != sha1Hex && len(cfg.Commit) != sha256Hex:
				return fmt.Errorf("--commit %q: --repo needs the commit in full", cfg.Commit)
			}
			return cfg.Validate()
		},
		RunE: o.runE(func(cmd *cobra.Command, _ []string, client kubernetes.Interface, ns string) error {
			cfg.Namespace, cfg.Out = ns, cmd.OutOrStdout()
			if allNamespaces {
				cfg.Namespace = metav1.NamespaceAll
			}
			anc, err := newRepoAncestry(git)
			if err != nil {
				return err
			}
			return runWait(cmd.Context(), client, cfg, anc)
		}),
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&cfg.Commit, "commit", "", "the commit to wait for, in full or its first 7 or more characters (default: the sync's applied commit)")
	cmd.Flags().DurationVar(&cfg.Timeout, "timeout", defaultWaitTimeout, "how long to wait")
	cmd.Flags().BoolVar(&cfg.All, "all", false, "wait for every workload of the sync --sync-name")
	cmd.Flags().StringVar(&cfg.SyncName, "sync-name", "", "the sync of --all; with named workloads, the sync whose record says that one has no Deployment (default: the other workloads' syncs, else every sync's record)")
	cmd.Flags().StringVar(&cfg.StatusNamespace, "status-namespace", "", "namespace of the syncs' status ConfigMaps (default: the workload's, else wherever the sync's is)")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "with --all, the sync's workloads of every namespace")
	addWaitGitFlags(cmd.Flags(), git)
	return cmd
}
