package notify

import (
	"context"
	"sync"
)

// queue is one receiver's bounded queue of notifications, first in first
// out. push never blocks: when the queue is full it drops the oldest
// notification for the new one, since the newest says where things stand
// now (a receiver back after an outage hears of the last 100 changes,
// not of the first 100). Worked through with a limit of 3 and a receiver
// down: Progressing, Paused, Progressing queued; Healthy arrives and
// Progressing (the first) is dropped; the receiver, back, gets Paused,
// Progressing, Healthy, and so the rollout's end.
type queue struct {
	mu     sync.Mutex
	items  []Notification
	limit  int
	closed bool
	// wake holds a token when items may have arrived since pop last
	// looked.
	wake chan struct{}
}

func newQueue(limit int) *queue {
	return &queue{limit: max(limit, 1), wake: make(chan struct{}, 1)}
}

// push queues n and reports how many notifications it dropped to make
// room: 0 or 1, or 1 when the queue is closed and n itself is dropped.
func (q *queue) push(n Notification) (dropped int) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 1
	}
	if len(q.items) == q.limit {
		copy(q.items, q.items[1:])
		q.items = q.items[:len(q.items)-1]
		dropped = 1
	}
	q.items = append(q.items, n)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default: // a token is there already
	}
	return dropped
}

// pop waits for the oldest notification and takes it. It reports false
// once the queue is closed and empty, or once ctx has ended, leaving what
// is queued.
func (q *queue) pop(ctx context.Context) (Notification, bool) {
	for ctx.Err() == nil {
		q.mu.Lock()
		if len(q.items) > 0 {
			n := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			return n, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return Notification{}, false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
		}
	}
	return Notification{}, false
}

// close refuses further pushes; pop still hands out what is queued.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain empties the queue and returns how many notifications it held.
func (q *queue) drain() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items)
	q.items = nil
	return n
}

// len is how many notifications wait.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
