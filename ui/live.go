package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"time"
)

// How a live page follows the cluster.
const (
	// liveSettle is how long a change waits for the changes that come with
	// it (a rollout step writes Deployments, pods and EndpointSlices in a
	// burst) before the page is rendered: one push, not ten.
	liveSettle = 150 * time.Millisecond
	// liveEvery is the least time between two pushes of one page, so that
	// a busy cluster costs each page at most two renders a second.
	liveEvery = 500 * time.Millisecond
	// liveKeepAlive is how often an idle stream sends a comment, so that
	// proxies keep it open.
	liveKeepAlive = 20 * time.Second
	// liveRetry is how long the browser waits before it opens a stream
	// that broke again.
	liveRetry = 2 * time.Second
)

// serveLive is the live stream of a page: Server-Sent Events, each the
// page's main part rendered again after a change in what it shows, the
// first at once. The page's script swaps it in; nothing is sent when the
// render is the same.
func (s *Server) serveLive(w http.ResponseWriter, r *http.Request) {
	path := "/" + r.PathValue("page")
	if s.streams.Add(1) > maxStreams {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many live pages open", http.StatusServiceUnavailable)
		return
	}
	defer s.streams.Add(-1)
	v, release, err := s.acquire(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
	if _, ok := s.page(v, path); !ok {
		http.NotFound(w, r)
		return
	}
	rc := http.NewResponseController(w)
	// A stream lasts as long as the page is open: no server deadline.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	fmt.Fprintf(w, "retry: %d\n\n", liveRetry.Milliseconds())

	ns := namespaceOf(path)
	var seen uint64
	var last []byte
	var sent time.Time
	keepAlive := time.NewTicker(liveKeepAlive)
	defer keepAlive.Stop()
	for first := true; ; first = false {
		changed, now, wake := v.changes.since(seen, ns)
		if changed || first {
			seen = now
			p, ok := s.page(v, path)
			if !ok {
				fmt.Fprint(w, "event: gone\ndata: this workload no longer exists\n\n")
				_ = rc.Flush()
				return
			}
			body, err := s.pages.main(p)
			if err != nil {
				s.cfg.Log.Error("render a live page of the web view", "path", path, "err", err)
				return
			}
			if !bytes.Equal(body, last) {
				if err := sendEvent(w, "page", body); err != nil {
					return
				}
				last, sent = body, time.Now()
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			continue
		case <-wake:
		}
		// Let the burst settle, and keep to liveEvery.
		settle := time.NewTimer(max(liveSettle, liveEvery-time.Since(sent)))
		select {
		case <-r.Context().Done():
			settle.Stop()
			return
		case <-settle.C:
		}
	}
}

// sendEvent writes one Server-Sent Event: its name, and data a line per
// line of data.
func sendEvent(w http.ResponseWriter, name string, data []byte) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", name)
	// A carriage return ends a line of the stream too: every kind of line
	// end starts a data line, so that no text of the page can start a
	// field of its own.
	data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}
