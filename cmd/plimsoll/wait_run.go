package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	gosync "sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/workload"
)

// waitGuardLook is how often the guard looks: as often as Wait does.
const waitGuardLook = time.Second

// runWait is plimsoll wait: workload.Wait for cfg, with a guard beside it
// (see guard) that ends the wait at once for a workload not found or a
// commit replaced by a history without it, and that waits again, for the
// rest of the timeout, for the descendant that replaced the awaited
// commit. The guard looks once before Wait starts, so that a workload not
// found is said before anything else.
func runWait(ctx context.Context, client kubernetes.Interface, cfg workload.WaitConfig, anc ancestor) error {
	out := &lockedWriter{w: cfg.Out}
	g := newGuard(client, cfg, anc, out)
	_, err := g.look(ctx) // a first target that moved is in g.commit()
	// The first Wait takes the whole timeout, and says so when it
	// passes; one for a descendant, what is left of it.
	deadline, timeout := time.Now().Add(cfg.Timeout), cfg.Timeout
	for err == nil {
		next := cfg
		next.Commit, next.Out, next.Timeout = g.commit(), out, timeout
		if next.Timeout <= 0 {
			return exitCode(exitWaitTimeout, fmt.Errorf("%w after %s", workload.ErrWaitTimeout, cfg.Timeout))
		}
		var follow bool
		if follow, err = g.beside(ctx, client, next); err == nil && !follow {
			if line := g.replacement(); line != "" {
				fmt.Fprintln(out, line)
			}
			return nil
		}
		timeout = time.Until(deadline).Round(time.Second)
	}
	switch {
	case errors.Is(err, workload.ErrWaitTimeout) && g.followed() != "":
		return exitCode(exitWaitTimeout, fmt.Errorf("wait for the descendant that replaced the awaited commit, in the rest of --timeout %s: %w", cfg.Timeout, err))
	case errors.Is(err, workload.ErrWaitTimeout):
		return exitCode(exitWaitTimeout, err)
	}
	return err
}

// beside runs workload.Wait for cfg with the guard looking beside it, and
// returns when either ends it: Wait's error (nil once every workload
// ended Healthy, checked by one more look), the guard's, or follow when
// the guard found the awaited commit replaced by a descendant.
func (g *guard) beside(ctx context.Context, client kubernetes.Interface, cfg workload.WaitConfig) (follow bool, err error) {
	waitCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- workload.Wait(waitCtx, client, cfg) }()
	ended := false
	defer func() {
		cancel()
		if !ended {
			<-done // nothing is printed after the wait's verdict
		}
	}()
	look := time.NewTicker(waitGuardLook)
	defer look.Stop()
	for {
		select {
		case err := <-done:
			ended = true
			if err != nil {
				return false, err
			}
			// Healthy by Wait's judgement: on a commit that the
			// guard may find replaced since its last look.
			return g.look(ctx)
		case <-look.C:
			if follow, err := g.look(ctx); follow || err != nil {
				return follow, err
			}
		}
	}
}

// lockedWriter lets Wait and the guard print whole lines, one at a time.
type lockedWriter struct {
	mu gosync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
