package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"
)

// Build information, stamped by the Makefile with
// -ldflags "-X main.version=... -X main.commit=...". A binary built without
// them (go build, go run) reports the defaults.
var (
	version = "dev"
	commit  = "unknown"
)

// buildInfo is what `plimsoll version` reports.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentBuildInfo() buildInfo {
	return buildInfo{
		Version:   version,
		Commit:    commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit plimsoll was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), output, currentBuildInfo())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// printVersion writes info as one line of text or as a JSON object.
func printVersion(w io.Writer, format string, info buildInfo) error {
	switch format {
	case "text":
		_, err := fmt.Fprintf(w, "plimsoll %s (commit %s, %s, %s)\n",
			info.Version, info.Commit, info.GoVersion, info.Platform)
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("print version: unknown output format %q (want text or json)", format)
	}
}
