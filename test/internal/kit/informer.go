package kit

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// RunInformer runs informer with handler until ctx ends or the test ends,
// and returns once its initial list has been delivered; what names what it
// watches, for a failure. When the test ends, it returns only once the
// informer has stopped, so a cleanup registered before it runs after the
// last event.
func RunInformer(ctx context.Context, t testing.TB, informer cache.SharedIndexInformer, handler cache.ResourceEventHandler, what string) {
	t.Helper()
	reg, err := informer.AddEventHandler(handler)
	if err != nil {
		t.Fatalf("watch %s: %v", what, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		t.Fatalf("list %s: informer stopped before syncing", what)
	}
}

// OnAddOrUpdate is a handler that hands observe every object added or
// updated.
func OnAddOrUpdate(observe func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}
}
