package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"plimsoll.dev/plimsoll/internal/redact"
)

// Config wires a Dispatcher. Zero fields take their defaults.
type Config struct {
	Receivers []Receiver
	Log       *slog.Logger
	Metrics   *Metrics
	// QueueSize bounds each receiver's queue (DefaultQueueSize).
	QueueSize int
	// Timeout bounds one attempt: connecting, sending, and the answer's
	// status (DefaultTimeout).
	Timeout time.Duration
	// Attempts is how many times a notification is tried before it is
	// given up on (DefaultAttempts).
	Attempts int
	// Backoff is the wait before the first retry, doubled for each next
	// one up to MaxBackoff (DefaultBackoff, DefaultMaxBackoff).
	Backoff, MaxBackoff time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

// Dispatcher delivers notifications to its receivers, each from a queue
// of its own by a sender of its own, so that a receiver that is down or
// hangs delays only its own notifications. A nil *Dispatcher sends
// nothing.
type Dispatcher struct {
	cfg     Config
	client  *http.Client
	senders []*sender
	// stop ends when Shutdown gives up: it cuts the attempt in flight and
	// any wait before a retry.
	stop    context.Context
	cancel  context.CancelFunc
	workers sync.WaitGroup
	closed  atomic.Bool
}

// sender is one receiver's queue and what its worker needs.
type sender struct {
	r      Receiver
	q      *queue
	redact redactor
	// overflowing is set from a drop until the queue empties again, so
	// that a full queue is logged once, not at every drop.
	overflowing atomic.Bool
}

// deliveryError is a failed attempt. Its text holds no URL; retry says
// whether another attempt may succeed, after says how long the receiver
// asked to be left alone (Retry-After).
type deliveryError struct {
	msg   string
	retry bool
	after time.Duration
}

func (e *deliveryError) Error() string { return e.msg }

// New starts a Dispatcher: one worker per receiver, until Shutdown.
func New(cfg Config) *Dispatcher {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.QueueSize = orDefault(cfg.QueueSize, DefaultQueueSize)
	cfg.Timeout = orDefault(cfg.Timeout, DefaultTimeout)
	cfg.Attempts = orDefault(cfg.Attempts, DefaultAttempts)
	cfg.Backoff = orDefault(cfg.Backoff, DefaultBackoff)
	cfg.MaxBackoff = orDefault(cfg.MaxBackoff, DefaultMaxBackoff)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	d := &Dispatcher{cfg: cfg, client: &http.Client{
		Transport: transport,
		// A webhook that redirects is misconfigured or hijacked: the
		// body is not sent on anywhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	d.stop, d.cancel = context.WithCancel(context.Background())
	for _, r := range cfg.Receivers {
		s := &sender{r: r, q: newQueue(cfg.QueueSize), redact: redactorOf(r.URL)}
		d.senders = append(d.senders, s)
		cfg.Metrics.receiver(r)
		d.workers.Add(1)
		go d.work(s)
	}
	return d
}

// Send queues n for every receiver and returns at once: it never waits
// for a receiver, and drops the oldest notification of a full queue.
// After Shutdown it drops n. The credentials of the URLs n.Message quotes
// are redacted: a receiver is a chat room, not the cluster.
func (d *Dispatcher) Send(n Notification) {
	if d == nil {
		return
	}
	n.Message = redact.Text(n.Message)
	for _, s := range d.senders {
		if d.closed.Load() {
			d.cfg.Metrics.drop(s.r, 1)
			continue
		}
		dropped := s.q.push(n)
		d.cfg.Metrics.drop(s.r, dropped)
		d.cfg.Metrics.length(s.r, s.q.len())
		if dropped > 0 && s.overflowing.CompareAndSwap(false, true) {
			d.cfg.Log.Warn("notification queue full: dropping the oldest notifications until it empties",
				"receiver", s.r.Name, "limit", d.cfg.QueueSize)
		}
	}
}

// Shutdown stops taking notifications and delivers what is queued until
// ctx ends; then it cuts the attempts in flight and drops the rest,
// counted and logged per receiver. It returns once every worker stopped.
func (d *Dispatcher) Shutdown(ctx context.Context) {
	if d == nil || !d.closed.CompareAndSwap(false, true) {
		return
	}
	for _, s := range d.senders {
		s.q.close()
	}
	finished := make(chan struct{})
	go func() {
		d.workers.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		d.cancel()
		<-finished
	}
	d.cancel()
	for _, s := range d.senders {
		if n := s.q.drain(); n > 0 {
			d.cfg.Metrics.drop(s.r, n)
			d.cfg.Log.Warn("notifications not delivered before shutdown", "receiver", s.r.Name, "dropped", n)
		}
		d.cfg.Metrics.length(s.r, 0)
	}
}

// work delivers s's notifications one at a time, in order, until the
// queue is closed and empty or Shutdown gives up.
func (d *Dispatcher) work(s *sender) {
	defer d.workers.Done()
	for {
		n, ok := s.q.pop(d.stop)
		if !ok {
			return
		}
		left := s.q.len()
		d.cfg.Metrics.length(s.r, left)
		if left == 0 {
			s.overflowing.Store(false)
		}
		d.deliver(s, n)
	}
}

// deliver posts n to s's receiver, retrying what may succeed later (no
// answer, a refused connection, 408, 429, 5xx) with exponential backoff,
// up to the configured attempts.
func (d *Dispatcher) deliver(s *sender, n Notification) {
	log := d.cfg.Log.With("receiver", s.r.Name, "kind", string(n.Kind), "subject", n.subject(), "state", n.state())
	body, err := s.r.Format.encode(n)
	if err != nil {
		log.Error("notification not delivered", "err", err)
		d.cfg.Metrics.delivered(s.r, resultFailed)
		return
	}
	for attempt := 1; ; attempt++ {
		failure := d.post(s, body)
		if failure == nil {
			log.Debug("notification sent", "attempts", attempt)
			d.cfg.Metrics.delivered(s.r, resultSent)
			return
		}
		wait := max(backoff(attempt, d.cfg.Backoff, d.cfg.MaxBackoff), min(failure.after, d.cfg.MaxBackoff))
		if !failure.retry || attempt >= d.cfg.Attempts || !sleep(d.stop, wait) {
			log.Warn("notification not delivered", "attempts", attempt, "err", redact.Text(s.redact.hide(failure.Error())))
			d.cfg.Metrics.delivered(s.r, resultFailed)
			return
		}
		d.cfg.Metrics.retried(s.r)
	}
}

// post makes one attempt. The error says what went wrong without the
// URL: net/http's *url.Error, which quotes it, is unwrapped, and the
// answer's body is neither kept nor logged.
func (d *Dispatcher) post(s *sender, body []byte) *deliveryError {
	ctx, cancel := context.WithTimeout(d.stop, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.r.URL, bytes.NewReader(body))
	if err != nil {
		return &deliveryError{msg: "build the request: the URL is not usable"}
	}
	req.Header.Set("Content-Type", "application/json")
	if d.cfg.UserAgent != "" {
		req.Header.Set("User-Agent", d.cfg.UserAgent)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		switch {
		case d.stop.Err() != nil:
			return &deliveryError{msg: "given up at shutdown"}
		case errors.Is(err, context.DeadlineExceeded):
			return &deliveryError{msg: fmt.Sprintf("no answer within %s", d.cfg.Timeout), retry: true}
		}
		return &deliveryError{msg: "post: " + err.Error(), retry: true}
	}
	defer resp.Body.Close()
	_, _ = io.CopyN(io.Discard, resp.Body, maxResponseRead)
	code := resp.StatusCode
	answer := fmt.Sprintf("answered %d %s", code, http.StatusText(code))
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return &deliveryError{msg: answer, retry: true, after: retryAfter(resp.Header.Get("Retry-After"))}
	case code >= 300 && code < 400:
		return &deliveryError{msg: answer + " (redirects are not followed)"}
	}
	return &deliveryError{msg: answer}
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// backoff is the wait after failed attempt n (1 for the first): base
// doubled n-1 times, at most limit. With 1s and 30s: 1s, 2s, 4s, 8s,
// 16s, 30s, 30s...
func backoff(n int, base, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// retryAfter reads a Retry-After header given in seconds; 0 for none or
// any other form.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// sleep waits for d and reports true, or reports false as soon as ctx
// ends.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
