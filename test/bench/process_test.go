//go:build bench

package bench

import (
	"testing"
	"time"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/proc"
)

// procGroup is the processes of one controller, measured as one: plimsoll's
// daemon or Argo Rollouts' controller alone, Flux's source-controller and
// kustomize-controller together.
type procGroup []*kit.Daemon

// started is when the first of the processes started.
func (g procGroup) started() time.Time {
	at := g[0].Started
	for _, d := range g[1:] {
		if d.Started.Before(at) {
			at = d.Started
		}
	}
	return at
}

// failIfExited fails the test when any of the processes exited.
func (g procGroup) failIfExited(t *testing.T) {
	for _, d := range g {
		d.FailIfExited(t)
	}
}

// stop stops every process, the last started first.
func (g procGroup) stop(t *testing.T) {
	for i := len(g) - 1; i >= 0; i-- {
		g[i].Stop(t)
	}
}

// cpu is the user and system CPU seconds the processes have used.
func (g procGroup) cpu() (float64, error) {
	var sum float64
	for _, d := range g {
		s, err := procCPU(d.Cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// memory is the sum of the processes' peak RSS (an upper bound of their
// peak together, which may have come at different moments) and of their
// RSS now, in KiB.
func (g procGroup) memory() (peak, rss int64, err error) {
	for _, d := range g {
		p, err := proc.PeakRSS(d.Cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		r, err := proc.RSS(d.Cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		peak, rss = peak+p, rss+r
	}
	return peak, rss, nil
}

// resetPeakRSS sets each process's peak RSS back to its RSS now.
func (g procGroup) resetPeakRSS() error {
	for _, d := range g {
		if err := resetPeakRSS(d.Cmd.Process.Pid); err != nil {
			return err
		}
	}
	return nil
}
