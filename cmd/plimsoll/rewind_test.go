package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHoldRewindsFlag: run and sync --once hold rewinds when asked, off
// by default; diff, which shows what applying the head would change,
// takes no such flag.
func TestHoldRewindsFlag(t *testing.T) {
	for _, tc := range []struct {
		cmd  *cobra.Command
		want bool
	}{
		{newRunCommand(), true},
		{newSyncCommand(), true},
		{newDiffCommand(), false},
	} {
		f := tc.cmd.Flags().Lookup("hold-rewinds")
		if got := f != nil; got != tc.want {
			t.Errorf("%s has --hold-rewinds: %v, want %v", tc.cmd.Name(), got, tc.want)
		}
		if f != nil && f.DefValue != "false" {
			t.Errorf("%s --hold-rewinds defaults to %s, want false", tc.cmd.Name(), f.DefValue)
		}
	}
	o := &sourceOptions{}
	fs := pflag.NewFlagSet("sync", pflag.ContinueOnError)
	o.addHoldRewindsFlag(fs)
	if err := fs.Parse([]string{"--hold-rewinds"}); err != nil || !o.holdRewinds {
		t.Errorf("--hold-rewinds parsed to %v, %v; want true", o.holdRewinds, err)
	}
}
