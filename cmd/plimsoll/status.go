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
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/sync/inventory"
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
	Sync      *syncReport         `json:"sync"`
}

// syncReport is the sync's status, read from its ConfigMap.
type syncReport struct {
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Status        string `json:"status"`
	Commit        string `json:"commit"`
	FetchedCommit string `json:"fetchedCommit"`
	Message       string `json:"message"`
	StaleSince    string `json:"staleSince,omitempty"`
	// RecordDamage says why the record's inventory cannot be read (the
	// next sync rebuilds it), "" when it can.
	RecordDamage string `json:"recordDamage,omitempty"`
	// BlockedWriter is the note of a second daemon on this sync, which
	// writes nothing while another holds it.
	BlockedWriter string `json:"blockedWriter,omitempty"`
}

func newStatusCommand() *cobra.Command {
	o := &clusterOptions{}
	var output, syncName, statusNamespace string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List every workload and the sync, from their annotations",
		Args:  cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("unknown output %q (want table or json)", output)
			}
			return nil
		},
		RunE: o.runE(func(cmd *cobra.Command, _ []string, client kubernetes.Interface, ns string) error {
			ctx := cmd.Context()
			workloads, err := workload.List(ctx, client, ns)
			if err != nil {
				return err
			}
			if statusNamespace == "" {
				statusNamespace = ns
			}
			rec, err := inventory.NewStore(client, statusNamespace, syncName).Load(ctx)
			if err != nil {
				return err
			}
			report := statusReport{Workloads: workloads}
			if rec.Status.State != "" {
				st := rec.Status
				report.Sync = &syncReport{Name: syncName, Namespace: statusNamespace, Status: st.State, Commit: st.Commit,
					FetchedCommit: st.FetchedCommit, Message: st.Message, StaleSince: st.StaleSince}
				if rec.Lost != inventory.Missing {
					report.Sync.RecordDamage = rec.Lost
				}
				report.Sync.BlockedWriter = rec.BlockedWriter
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(report)
			}
			return printStatus(cmd.OutOrStdout(), report, syncName, statusNamespace)
		}),
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().StringVar(&syncName, "sync-name", defaultSyncName, "name of the sync whose status to show")
	cmd.Flags().StringVar(&statusNamespace, "status-namespace", "", "namespace of the sync's status ConfigMap (default: --namespace)")
	return cmd
}

// printStatus writes the report as two tables: workloads, then the sync.
func printStatus(out io.Writer, r statusReport, syncName, statusNamespace string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tSTRATEGY\tPHASE\tREVISION\tCOMMIT\tMESSAGE")
	for _, w := range r.Workloads {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", w.Name, w.Strategy, orDash(w.Phase), w.Revision, orDash(short(w.Commit)), w.Message)
		if r := w.Analysis; r != nil && r.Hash != "" {
			for _, m := range r.Metrics {
				fmt.Fprintf(tw, "\t\t\t\t\tanalysis %s %s: %s\n", r.Stage, strings.ToLower(string(r.Verdict)), measured(m))
			}
		}
	}
	if len(r.Workloads) == 0 {
		fmt.Fprintln(tw, "(no workloads)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SYNC\tSTATUS\tCOMMIT\tMESSAGE")
	if s := r.Sync; s != nil {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Status, orDash(short(s.Commit)), s.Message)
		if s.BlockedWriter != "" {
			fmt.Fprintf(tw, "\t\t\tanother daemon writes nothing: %s\n", s.BlockedWriter)
		}
		if s.RecordDamage != "" {
			fmt.Fprintf(tw, "\t\t\tdamaged record: %s; the next sync rebuilds its inventory\n", s.RecordDamage)
		}
	} else {
		fmt.Fprintf(tw, "%s\t-\t-\tno status in namespace %s\n", syncName, statusNamespace)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// short is the first 7 characters of a commit id.
func short(commit string) string {
	return commit[:min(len(commit), 7)]
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
