package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// notInChart are the flags of `plimsoll run` the chart sets no value for,
// each with the reason: everything else a user can give the daemon, the
// chart's values can give it too.
var notInChart = map[string]string{
	"kubeconfig":       "in a pod the daemon uses its ServiceAccount",
	"context":          "in a pod the daemon uses its ServiceAccount",
	"status-namespace": "the daemon's own namespace (POD_NAMESPACE), which the chart sets",
	"git-token-env":    "the chart mounts credentials as files (git.tokenKey)",
	"git-password-env": "the chart mounts credentials as files (git.passwordKey)",
}

// TestChartSetsEveryRunFlag fails for a flag of `plimsoll run` that
// charts/plimsoll/templates/deployment.yaml never writes and notInChart
// does not explain: a flag added to the daemon without a chart value
// cannot be used by those who install it with the chart but through
// extraArgs.
func TestChartSetsEveryRunFlag(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "plimsoll", "templates", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	template := string(raw)
	run := commands(newRootCommand())["plimsoll run"]
	if run == nil {
		t.Fatal("no run command")
	}
	run.LocalFlags().VisitAll(func(f *pflag.Flag) {
		_, excused := notInChart[f.Name]
		// An argument is a list item (- --name=value, - --name), or a
		// quoted string ("--name=value") when its value is free text.
		written := strings.Contains(template, "- --"+f.Name+"=") || strings.Contains(template, "- --"+f.Name+"\n") ||
			strings.Contains(template, `"--`+f.Name+`=`)
		switch {
		case written && excused:
			t.Errorf("--%s: the chart writes it, and notInChart says it does not", f.Name)
		case !written && !excused:
			t.Errorf("--%s: charts/plimsoll/templates/deployment.yaml never writes it: add a value to values.yaml, or a reason to notInChart", f.Name)
		}
	})
	for name := range notInChart {
		if run.LocalFlags().Lookup(name) == nil {
			t.Errorf("notInChart names --%s, which run does not have", name)
		}
	}
}
