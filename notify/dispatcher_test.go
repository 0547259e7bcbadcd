package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// patience bounds every wait of these tests for something that happens
// in the background; it is generous, so that only a real hang fails.
const patience = 30 * time.Second

// fakeReceiver is a webhook receiver: it records the messages of the
// notifications it gets and answers each with the next of codes, 200 once
// they run out. While hold is open, a request waits until it is closed.
type fakeReceiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	got     []string
	codes   []int
	hold    chan struct{}
	arrived chan struct{}
}

func newFakeReceiver(t *testing.T, codes ...int) *fakeReceiver {
	t.Helper()
	f := &fakeReceiver{t: t, codes: codes, arrived: make(chan struct{}, 100)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// holding makes requests wait until release (or the test's end).
func (f *fakeReceiver) holding() *fakeReceiver {
	f.hold = make(chan struct{})
	f.t.Cleanup(f.release) // before the server closes: it waits for them
	return f
}

func (f *fakeReceiver) release() {
	select {
	case <-f.hold:
	default:
		close(f.hold)
	}
}

func (f *fakeReceiver) serve(w http.ResponseWriter, r *http.Request) {
	f.arrived <- struct{}{}
	if f.hold != nil {
		<-f.hold
	}
	body, _ := io.ReadAll(r.Body)
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil || r.Header.Get("Content-Type") != "application/json" {
		f.t.Errorf("receiver got %q (%s), want a JSON notification", body, r.Header.Get("Content-Type"))
	}
	f.mu.Lock()
	f.got = append(f.got, n.Message)
	code := http.StatusOK
	if len(f.codes) > 0 {
		code, f.codes = f.codes[0], f.codes[1:]
	}
	f.mu.Unlock()
	if code == http.StatusFound {
		w.Header().Set("Location", "/elsewhere")
	}
	w.WriteHeader(code)
}

// messages returns the messages received so far.
func (f *fakeReceiver) messages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// waitArrived waits for a request to arrive.
func (f *fakeReceiver) waitArrived() {
	f.t.Helper()
	select {
	case <-f.arrived:
	case <-time.After(patience):
		f.t.Fatal("no request reached the receiver")
	}
}

// logBuffer is a log sink safe for the senders' goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testDispatcher starts a Dispatcher with one webhook receiver at url
// (path "/hook/<token>"), backoff of 1ms, and cfg's other fields; it is
// shut down when the test ends.
func testDispatcher(t *testing.T, url string, cfg Config) (*Dispatcher, *Metrics, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg.Receivers = []Receiver{{Name: "webhook/ops", Format: FormatWebhook, URL: url + "/hook/" + token + "?sig=" + token}}
	cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Metrics = NewMetrics(prometheus.NewRegistry())
	if cfg.Backoff == 0 {
		cfg.Backoff, cfg.MaxBackoff = time.Millisecond, 4*time.Millisecond
	}
	d := New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		d.Shutdown(ctx)
		if strings.Contains(logs.String(), token) {
			t.Errorf("the log shows the receiver's token:\n%s", logs)
		}
	})
	return d, cfg.Metrics, logs
}

// count reads a counter of receiver webhook/ops.
func count(c *prometheus.CounterVec, labels ...string) int {
	return int(testutil.ToFloat64(c.WithLabelValues(append([]string{"webhook/ops"}, labels...)...)))
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeliverRetriesUntilSent: 500 and 503 are tried again after a
// backoff; the third attempt is sent. Each attempt posts the same body.
func TestDeliverRetriesUntilSent(t *testing.T) {
	f := newFakeReceiver(t, 500, 503)
	d, m, _ := testDispatcher(t, f.srv.URL, Config{})
	d.Send(pausedCanary())
	eventually(t, "the notification sent", func() bool { return count(m.deliveries, resultSent) == 1 })
	if got := f.messages(); len(got) != 3 || got[0] != got[2] {
		t.Errorf("receiver got %q, want the same notification 3 times", got)
	}
	if r, failed := count(m.retries), count(m.deliveries, resultFailed); r != 2 || failed != 0 {
		t.Errorf("retries %d, failed %d; want 2 and 0", r, failed)
	}
}

// TestDeliverGivesUp: an answer that will not change (404, a redirect) is
// not tried again; 5xx is, up to the attempts. The give-up is counted and
// logged with the answer, never with the URL.
func TestDeliverGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		codes    []int
		attempts int
		log      string
	}{
		{"not found", []int{404}, 1, "answered 404 Not Found"},
		{"redirect", []int{302}, 1, "answered 302 Found (redirects are not followed)"},
		{"server error", []int{500, 500, 500, 500}, 3, "answered 500 Internal Server Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeReceiver(t, tc.codes...)
			d, m, logs := testDispatcher(t, f.srv.URL, Config{Attempts: 3})
			d.Send(pausedCanary())
			eventually(t, "the give-up", func() bool { return count(m.deliveries, resultFailed) == 1 })
			if got := len(f.messages()); got != tc.attempts {
				t.Errorf("%d attempts, want %d", got, tc.attempts)
			}
			if r := count(m.retries); r != tc.attempts-1 {
				t.Errorf("%d retries counted, want %d", r, tc.attempts-1)
			}
			if l := logs.String(); !strings.Contains(l, "notification not delivered") || !strings.Contains(l, tc.log) ||
				!strings.Contains(l, "receiver=webhook/ops") {
				t.Errorf("log lacks the give-up with %q:\n%s", tc.log, l)
			}
		})
	}
}

// TestDeliverNoAnswer: a receiver that never answers costs Timeout per
// attempt, and is given up on after the attempts.
func TestDeliverNoAnswer(t *testing.T) {
	f := newFakeReceiver(t).holding()
	d, m, logs := testDispatcher(t, f.srv.URL, Config{Timeout: 20 * time.Millisecond, Attempts: 2})
	d.Send(pausedCanary())
	eventually(t, "the give-up", func() bool { return count(m.deliveries, resultFailed) == 1 })
	if l := logs.String(); !strings.Contains(l, "no answer within 20ms") || !strings.Contains(l, "attempts=2") {
		t.Errorf("log lacks the timeout after 2 attempts:\n%s", l)
	}
}

// TestDeliverUnreachable: a refused connection is retried and logged
// without the URL (net/http quotes it in its error).
func TestDeliverUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	d, m, logs := testDispatcher(t, url, Config{Attempts: 2})
	d.Send(pausedCanary())
	eventually(t, "the give-up", func() bool { return count(m.deliveries, resultFailed) == 1 })
	if l := logs.String(); !strings.Contains(l, "post: dial tcp") || count(m.retries) != 1 {
		t.Errorf("want one retry and the dial error logged; retries %d, log:\n%s", count(m.retries), l)
	}
}

// TestSendWhileReceiverHangs: with the receiver holding the first
// notification, 10 more are sent at once into a queue of 3: Send returns
// every time, the 7 oldest are dropped and counted, and once the receiver
// answers it gets the first and the 3 newest, in order.
func TestSendWhileReceiverHangs(t *testing.T) {
	f := newFakeReceiver(t).holding()
	d, m, logs := testDispatcher(t, f.srv.URL, Config{QueueSize: 3, Timeout: time.Minute})
	d.Send(numbered(0))
	f.waitArrived()
	sent := make(chan struct{})
	go func() {
		for i := 1; i <= 10; i++ {
			d.Send(numbered(i))
		}
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(patience):
		t.Fatal("Send blocked on a receiver that hangs")
	}
	if dropped := count(m.dropped); dropped != 7 {
		t.Errorf("%d dropped, want 7", dropped)
	}
	if q := testutil.ToFloat64(m.queued.WithLabelValues("webhook/ops")); q != 3 {
		t.Errorf("queue length %v, want 3", q)
	}
	if n := strings.Count(logs.String(), "notification queue full"); n != 1 {
		t.Errorf("the full queue was logged %d times, want once", n)
	}
	f.release()
	eventually(t, "4 notifications sent", func() bool { return count(m.deliveries, resultSent) == 4 })
	if got, want := f.messages(), []string{"a", "i", "j", "k"}; !slices.Equal(got, want) {
		t.Errorf("receiver got %v, want %v", got, want)
	}
}

// TestShutdownDelivers: what is queued at shutdown goes out; what is sent
// after is dropped.
func TestShutdownDelivers(t *testing.T) {
	f := newFakeReceiver(t)
	d, m, _ := testDispatcher(t, f.srv.URL, Config{})
	for i := range 5 {
		d.Send(numbered(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	d.Shutdown(ctx)
	d.Send(numbered(5))
	if got := f.messages(); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("receiver got %v, want a to e", got)
	}
	if sent, dropped := count(m.deliveries, resultSent), count(m.dropped); sent != 5 || dropped != 1 {
		t.Errorf("sent %d, dropped %d; want 5 and 1 (sent after shutdown)", sent, dropped)
	}
}

// TestShutdownGivesUp: with the receiver hanging, Shutdown waits only as
// long as its context: the notification in flight fails, the 3 queued
// are dropped, counted and logged.
func TestShutdownGivesUp(t *testing.T) {
	f := newFakeReceiver(t).holding()
	d, m, logs := testDispatcher(t, f.srv.URL, Config{Timeout: time.Hour})
	for i := range 4 {
		d.Send(numbered(i))
	}
	f.waitArrived()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() {
		d.Shutdown(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("Shutdown did not give up on a receiver that hangs")
	}
	if failed, dropped := count(m.deliveries, resultFailed), count(m.dropped); failed != 1 || dropped != 3 {
		t.Errorf("failed %d, dropped %d; want 1 and 3", failed, dropped)
	}
	if l := logs.String(); !strings.Contains(l, "given up at shutdown") || !strings.Contains(l, "notifications not delivered before shutdown") {
		t.Errorf("log lacks the give-up at shutdown:\n%s", l)
	}
}

// TestBackoff doubles from the base up to the cap.
func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		want  time.Duration
		base  time.Duration
		limit time.Duration
	}{
		{"first retry", 1, time.Second, time.Second, 30 * time.Second},
		{"second", 2, 2 * time.Second, time.Second, 30 * time.Second},
		{"fifth", 5, 16 * time.Second, time.Second, 30 * time.Second},
		{"capped", 6, 30 * time.Second, time.Second, 30 * time.Second},
		{"long capped", 60, 30 * time.Second, time.Second, 30 * time.Second},
		{"base over cap", 1, 5 * time.Second, 10 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoff(tc.n, tc.base, tc.limit); got != tc.want {
				t.Errorf("backoff(%d, %s, %s) = %s, want %s", tc.n, tc.base, tc.limit, got, tc.want)
			}
		})
	}
}

// TestRetryAfter reads seconds and ignores every other form.
func TestRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "7": 7 * time.Second, "-1": 0, "Fri, 13 Mar 2026 12:00:00 GMT": 0} {
		if got := retryAfter(in); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestSendRedactsURLCredentials: a message that quotes a URL with a
// password and a token reaches the receiver without them.
func TestSendRedactsURLCredentials(t *testing.T) {
	f := newFakeReceiver(t)
	d, m, _ := testDispatcher(t, f.srv.URL, Config{})
	n := failedSync()
	n.Message = "commit 9f8e7d6 not applied (render failed): read index https://ci:hunter22@charts.example/index.yaml?access_token=tok-9911: 401 Unauthorized"
	d.Send(n)
	eventually(t, "the notification sent", func() bool { return count(m.deliveries, resultSent) == 1 })
	want := "commit 9f8e7d6 not applied (render failed): read index https://[redacted]@charts.example/index.yaml?access_token=[redacted]: 401 Unauthorized"
	if got := f.messages(); len(got) != 1 || got[0] != want {
		t.Errorf("receiver got %q, want [%q]", got, want)
	}
}
