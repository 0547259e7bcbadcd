package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

// Trace's defaults.
const (
	defaultTraceInterval = 500 * time.Millisecond
	// clearScreen moves the cursor home and clears the terminal, so that
	// each view is drawn in place.
	clearScreen = "\x1b[H\x1b[2J"
)

func newTraceCommand() *cobra.Command {
	o := &clusterOptions{}
	var untilDone bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "trace WORKLOAD",
		Short: "Watch a rollout live: Deployments, ReplicaSets, pods and the Service's ready endpoints",
		Long: "trace redraws the view in place on a terminal; elsewhere it prints one line each time\n" +
			"the view changes. With --until-done it ends with the rollout, exiting non-zero when the\n" +
			"rollout ends Degraded.",
		Args: cobra.ExactArgs(1),
		RunE: o.runE(func(cmd *cobra.Command, args []string, client kubernetes.Interface, ns string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			tty := false
			if f, ok := out.(*os.File); ok {
				tty = term.IsTerminal(int(f.Fd()))
			}
			var last string
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				tr, err := workload.ReadTrace(ctx, client, ns, args[0])
				if err != nil {
					return err
				}
				if tty {
					fmt.Fprint(out, clearScreen)
					printTrace(out, tr)
				} else if line := traceLine(tr); line != last {
					fmt.Fprintf(out, "%s %s\n", time.Now().Format(time.TimeOnly), line)
					last = line
				}
				if untilDone && tr.Done() {
					if tr.Workload.Phase == contract.PhaseDegraded {
						return fmt.Errorf("rollout of %s ended Degraded: %s", tr.Workload.Name, tr.Workload.Message)
					}
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
			}
		}),
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&untilDone, "until-done", false, "exit when the rollout is Healthy or Degraded")
	cmd.Flags().DurationVar(&interval, "interval", defaultTraceInterval, "how often to look")
	return cmd
}

// traceLine is the trace as one line, for output that is not a terminal:
//
//	api canary revision 2 Paused | api 3/3 | api-canary 1/1 | Service api 4 ready (1 api-canary) | canary step 2/5: ...
func traceLine(tr workload.Trace) string {
	w := tr.Workload
	parts := []string{fmt.Sprintf("%s %s revision %d %s", w.Name, w.Strategy, w.Revision, w.Phase)}
	for _, d := range tr.Deployments {
		parts = append(parts, fmt.Sprintf("%s %d/%d", d.Name, d.Ready, d.Desired))
	}
	if s := tr.Set; s != nil {
		parts = append(parts, fmt.Sprintf("%s %s %d/%d, %d updated%s", s.Kind, s.Name, s.Ready, s.Desired, s.Updated, held(s)))
	}
	for _, s := range tr.Services {
		parts = append(parts, fmt.Sprintf("Service %s %d ready%s", s.Name, len(s.ReadyPods), byDeployment(s.ReadyPods, tr.Deployments)))
	}
	parts = append(parts, w.Message)
	return strings.Join(parts, " | ")
}

// byDeployment counts ready pods by the Deployment they belong to, when
// they belong to more than one: " (2 web-blue, 2 web-green)".
func byDeployment(pods []string, deploys []workload.TraceDeployment) string {
	var counts []string
	for _, d := range deploys {
		n := 0
		for _, p := range pods {
			if strategies.PodOf(p, d.Name) {
				n++
			}
		}
		if n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, d.Name))
		}
	}
	if len(counts) < 2 {
		return ""
	}
	return " (" + strings.Join(counts, ", ") + ")"
}

// printTrace draws the whole view, for a terminal.
func printTrace(out io.Writer, tr workload.Trace) {
	w := tr.Workload
	fmt.Fprintf(out, "%s/%s  %s  revision %d  %s  (%s)\n  %s\n\n", w.Namespace, w.Name, w.Strategy, w.Revision, w.Phase,
		time.Now().Format(time.TimeOnly), w.Message)
	if tr.Set != nil {
		printSetTrace(out, tr)
	} else {
		printDeploymentsTrace(out, tr)
	}
	if r := w.Analysis; r != nil && r.Hash != "" {
		fmt.Fprintf(out, "\nAnalysis %s of template %s: %s\n", r.Stage, r.Hash, r.Verdict)
		for _, m := range r.Metrics {
			fmt.Fprintf(out, "  %s\n", measured(m))
		}
	}
	for _, s := range tr.Services {
		fmt.Fprintf(out, "\nService %s  selector %s  %d ready endpoints%s\n", s.Name, s.Selector, len(s.ReadyPods), byDeployment(s.ReadyPods, tr.Deployments))
		for _, p := range s.ReadyPods {
			fmt.Fprintf(out, "  %s\n", p)
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printDeploymentsTrace draws a workload's Deployments, their ReplicaSets
// and its pods.
func printDeploymentsTrace(out io.Writer, tr workload.Trace) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEPLOYMENT\tROLE\tDESIRED\tREADY\tUPDATED\tAVAILABLE")
	for _, d := range tr.Deployments {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", d.Name, orDash(d.Role), d.Desired, d.Ready, d.Updated, d.Available)
		for _, rs := range d.ReplicaSets {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t\t\n", rs.Name, rs.Image, rs.Desired, rs.Ready)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POD\tREADY\tSERVING\tIMAGE\t\t")
	for _, p := range tr.Pods {
		state := yesNo(p.Ready)
		if p.Deleting {
			state = "terminating"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\n", p.Name, state, yesNo(p.Serving), p.Image)
	}
	_ = tw.Flush()
}

// printSetTrace draws a StatefulSet or a DaemonSet and its pods, each
// with its revision and node.
func printSetTrace(out io.Writer, tr workload.Trace) {
	s := tr.Set
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(s.Kind)+"\tDESIRED\tREADY\tUPDATED\tAVAILABLE\tUPDATE STRATEGY")
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s%s\n", s.Name, s.Desired, s.Ready, s.Updated, s.Available, s.UpdateStrategy, held(s))
	if s.UpdateRevision != "" {
		fmt.Fprintf(tw, "  revisions: current %s, update %s\t\t\t\t\t\n", s.CurrentRevision, s.UpdateRevision)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POD\tREADY\tREVISION\tNODE\tIMAGE\t")
	for _, p := range tr.Pods {
		state := yesNo(p.Ready)
		if p.Deleting {
			state = "terminating"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", p.Name, state, p.Revision, orDash(p.Node), p.Image)
	}
	_ = tw.Flush()
}

// held says what holds a set's update back: a StatefulSet's partition.
func held(s *workload.TraceSet) string {
	if s.Partition > 0 {
		return fmt.Sprintf(" (partition %d)", s.Partition)
	}
	return ""
}
