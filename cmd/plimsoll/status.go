package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

// reachTimeout bounds the first call to the cluster, so that an
// unreachable one is one clear line rather than a long wait.
const reachTimeout = 10 * time.Second

// clusterOptions are the flags of the commands that read or steer the
// cluster: kubectl's connection flags and the namespace.
type clusterOptions struct {
	kubeconfig, kubeContext, namespace string
}

func (o *clusterOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context to use")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the workloads (default: the context's, else default)")
}

// connect builds a client, checks that the cluster answers, and returns
// the namespace to work in.
func (o *clusterOptions) connect(ctx context.Context) (kubernetes.Interface, string, error) {
	cfg, ns, err := loadKubeconfig(o.kubeconfig, o.kubeContext)
	if err != nil {
		return nil, "", err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("build Kubernetes client: %w", err)
	}
	reach, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if _, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(reach).Raw(); err != nil {
		return nil, "", fmt.Errorf("cannot reach the cluster at %s: %v", cfg.Host, oneLine(err))
	}
	switch {
	case o.namespace != "":
		ns = o.namespace
	case ns == "":
		ns = defaultNamespace
	}
	return client, ns, nil
}

// runE wraps fn as a cobra RunE that connects to the cluster first.
func (o *clusterOptions) runE(fn func(cmd *cobra.Command, args []string, client kubernetes.Interface, ns string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		client, ns, err := o.connect(cmd.Context())
		if err != nil {
			return err
		}
		return fn(cmd, args, client, ns)
	}
}

// statusReport is what `plimsoll status -o json` prints.
type statusReport struct {
	Workloads []workload.Workload `json:"workloads"`
	// Syncs are the status records of the syncs found, sorted by
	// namespace and name.
	Syncs []workload.Sync `json:"syncs"`
}

func newStatusCommand() *cobra.Command {
	o := &clusterOptions{}
	var output, syncName, statusNamespace string
	var all bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List every workload and every sync, from their annotations",
		Long: `List every workload and every sync of the namespace, from their
annotations: the syncs are found by their status ConfigMaps
(plimsoll-sync-<name>, labelled plimsoll.dev/sync), whatever their names,
each with the replica that writes for it (the holder of its Lease
plimsoll-<name>). -A lists those of every namespace.`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("unknown output %q (want table or json)", output)
			}
			if all && statusNamespace != "" {
				return fmt.Errorf("--status-namespace names one namespace; -A reads them all")
			}
			return nil
		},
		RunE: o.runE(func(cmd *cobra.Command, _ []string, client kubernetes.Interface, ns string) error {
			ctx := cmd.Context()
			if all {
				ns = metav1.NamespaceAll
			}
			workloads, err := workload.List(ctx, client, ns)
			if err != nil {
				return err
			}
			if statusNamespace == "" {
				statusNamespace = ns
			}
			syncs, err := workload.FindSyncs(ctx, client, statusNamespace, syncName)
			if err == nil {
				workload.FindOwners(ctx, client, statusNamespace, syncs)
			}
			if err != nil {
				return err
			}
			report := statusReport{Workloads: workloads, Syncs: syncs}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(report)
			}
			return printStatus(cmd.OutOrStdout(), report, all, syncName, statusNamespace)
		}),
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the workloads and syncs of every namespace")
	cmd.Flags().StringVar(&syncName, "sync-name", "", "show only this sync (default: every sync found)")
	cmd.Flags().StringVar(&statusNamespace, "status-namespace", "", "namespace of the syncs' status ConfigMaps (default: --namespace)")
	return cmd
}

// printStatus writes the report as two tables: workloads, then the syncs;
// with all (-A), each row names its namespace first.
func printStatus(out io.Writer, r statusReport, all bool, syncName, statusNamespace string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	// col is a NAMESPACE column's cell, with its tab: only with all.
	col := func(v string) string {
		if !all {
			return ""
		}
		return v + "\t"
	}
	fmt.Fprintln(tw, col("NAMESPACE")+"WORKLOAD\tSTRATEGY\tPHASE\tREVISION\tCOMMIT\tMESSAGE")
	for _, w := range r.Workloads {
		name := w.Name
		if w.Kind != "" {
			name = strings.ToLower(w.Kind) + "/" + w.Name // as kubectl names it
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\t%s\n", col(w.Namespace), name, w.Strategy, orDash(w.Phase), w.Revision, orDash(revision.Short(w.Commit)), w.Message)
		if r := w.Analysis; r != nil && r.Hash != "" {
			for _, m := range r.Metrics {
				fmt.Fprintf(tw, "%s\t\t\t\t\tanalysis %s %s: %s\n", col(""), r.Stage, strings.ToLower(string(r.Verdict)), measured(m))
			}
		}
	}
	if len(r.Workloads) == 0 {
		fmt.Fprintln(tw, "(no workloads)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, col("NAMESPACE")+"SYNC\tSTATUS\tCOMMIT\tREPLICA\tMESSAGE")
	for _, s := range r.Syncs {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", col(s.Namespace), s.Name, s.Status, orDash(revision.Short(s.Commit)), orDash(s.Owner), s.Message)
		if s.BlockedWriter != "" {
			fmt.Fprintf(tw, "%s\t\t\t\tanother daemon writes nothing: %s\n", col(""), s.BlockedWriter)
		}
		if s.RecordDamage != "" {
			fmt.Fprintf(tw, "%s\t\t\t\tdamaged record: %s; the next sync rebuilds its inventory\n", col(""), s.RecordDamage)
		}
	}
	if len(r.Syncs) == 0 {
		switch {
		case syncName != "":
			fmt.Fprintf(tw, "%s%s\t-\t-\t-\tno status in %s\n", col(""), syncName, where(statusNamespace))
		default:
			fmt.Fprintf(tw, "(no syncs in %s)\n", where(statusNamespace))
		}
	}
	return tw.Flush()
}

// where is "namespace web", or "any namespace" for metav1.NamespaceAll.
func where(ns string) string {
	if ns == metav1.NamespaceAll {
		return "any namespace"
	}
	return "namespace " + ns
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds an error's text onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// measured is one metric of an analysis run in a few words:
// "error-rate/ratio running, 2 successful, 1 error, last 0.0012 at 12:00:31".
func measured(m strategies.MetricRun) string {
	var counts []string
	for _, c := range []struct {
		n    int
		what string
	}{{m.Successful, "successful"}, {m.Failed, "failed"}, {m.Inconclusive, "inconclusive"}, {m.Errors, "errors"}} {
		if c.n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	line := fmt.Sprintf("%s %s", m.Name, strings.ToLower(string(m.Verdict)))
	if len(counts) > 0 {
		line += ", " + strings.Join(counts, ", ")
	}
	if !m.At.IsZero() {
		line += fmt.Sprintf(", last %s at %s", orDash(m.Value), m.At.Local().Format(time.TimeOnly))
		if m.Message != "" {
			line += " (" + m.Message + ")"
		}
	}
	return line
}
