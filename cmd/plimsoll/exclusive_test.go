package main

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestDeadHere: only a holder of this host whose process has exited is
// taken for gone; a live process, another host or a malformed identity
// are not.
func TestDeadHere(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Skipf("run true: %v", err)
	}
	id := "node-a_100"
	tests := []struct {
		holder string
		want   bool
	}{
		{fmt.Sprintf("node-a_%d", exited.Process.Pid), true},
		{fmt.Sprintf("node-a_%d", os.Getpid()), false},
		{fmt.Sprintf("node-b_%d", exited.Process.Pid), false},
		{"node-a", false},
		{"node-a_x", false},
		{"node-a_0", false},
	}
	for _, tt := range tests {
		if got := deadHere(tt.holder, id); got != tt.want {
			t.Errorf("deadHere(%q, %q) = %v, want %v", tt.holder, id, got, tt.want)
		}
	}
}
