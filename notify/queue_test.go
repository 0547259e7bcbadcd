package notify

import (
	"context"
	"slices"
	"testing"
	"time"
)

// messages returns the messages of ns, in order.
func messages(ns []Notification) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Message)
	}
	return out
}

// numbered returns a notification whose message is its number.
func numbered(i int) Notification {
	return Notification{Kind: KindRollout, Message: string(rune('a' + i))}
}

// TestQueueDropsOldest fills a queue of 3 with 5 notifications: push never
// waits, the two oldest are dropped and counted, and the three newest come
// out in order.
func TestQueueDropsOldest(t *testing.T) {
	q := newQueue(3)
	dropped := 0
	for i := range 5 {
		dropped += q.push(numbered(i))
	}
	if dropped != 2 || q.len() != 3 {
		t.Fatalf("dropped %d, %d queued; want 2 dropped, 3 queued", dropped, q.len())
	}
	var got []Notification
	for range 3 {
		n, ok := q.pop(context.Background())
		if !ok {
			t.Fatal("pop of a non-empty queue reported nothing")
		}
		got = append(got, n)
	}
	if want := []string{"c", "d", "e"}; !slices.Equal(messages(got), want) {
		t.Errorf("popped %v, want %v: the newest, oldest first", messages(got), want)
	}
}

// TestQueuePushNeverBlocks pushes 10,000 notifications into a queue of 100
// that nobody reads: every push returns, and the queue stays at 100.
func TestQueuePushNeverBlocks(t *testing.T) {
	q := newQueue(100)
	done := make(chan int)
	go func() {
		dropped := 0
		for i := range 10000 {
			dropped += q.push(numbered(i % 26))
		}
		done <- dropped
	}()
	select {
	case dropped := <-done:
		if dropped != 9900 || q.len() != 100 {
			t.Errorf("dropped %d, %d queued; want 9900 and 100", dropped, q.len())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pushing into a full queue blocked")
	}
}

// TestQueueCloseHandsOutTheRest: a closed queue refuses pushes (counted as
// dropped) and still hands out what it holds, then reports it is done.
func TestQueueCloseHandsOutTheRest(t *testing.T) {
	q := newQueue(5)
	q.push(numbered(0))
	q.close()
	if dropped := q.push(numbered(1)); dropped != 1 {
		t.Errorf("push after close dropped %d, want 1", dropped)
	}
	if n, ok := q.pop(context.Background()); !ok || n.Message != "a" {
		t.Errorf("pop after close = %q, %v; want the queued a", n.Message, ok)
	}
	if _, ok := q.pop(context.Background()); ok {
		t.Error("pop of a closed, empty queue reported a notification")
	}
}

// TestQueuePopWaits: pop waits for a push, and gives up when its context
// ends.
func TestQueuePopWaits(t *testing.T) {
	q := newQueue(5)
	got := make(chan string)
	go func() {
		n, _ := q.pop(context.Background())
		got <- n.Message
	}()
	q.push(numbered(2))
	select {
	case m := <-got:
		if m != "c" {
			t.Errorf("pop got %q, want c", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pop did not wake up on a push")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := q.pop(ctx); ok {
		t.Error("pop with an ended context reported a notification")
	}
}
