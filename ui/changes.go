package ui

import (
	gosync "sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// changes is the feed the live pages follow: a number that grows with
// every change the informers see, the number of the last change in each
// namespace, and a channel closed at the next change. A page of one
// namespace wakes at every change but renders again only for one in its
// namespace.
type changes struct {
	mu   gosync.Mutex
	seq  uint64
	last map[string]uint64
	wake chan struct{}
}

func newChanges() *changes {
	return &changes{last: map[string]uint64{}, wake: make(chan struct{})}
}

// add records a change in namespace ns and wakes the pages.
func (c *changes) add(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.last[ns] = c.seq
	close(c.wake)
	c.wake = make(chan struct{})
}

// since reports whether a change in namespace ns (metav1.NamespaceAll: in
// any) came after number seen, and returns the number to remember and the
// channel closed at the next change.
func (c *changes) since(seen uint64, ns string) (changed bool, now uint64, wake <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ns == metav1.NamespaceAll {
		changed = c.seq > seen
	} else {
		changed = c.last[ns] > seen
	}
	return changed, c.seq, c.wake
}
