//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/daemon/webhook"
)

// TestWebhookRefusesAbuse posts what a hostile client would to a daemon's
// /hook: a 2 MiB body without credentials gets 401 (unread), a signed 2 MiB
// body gets 413, and a client that sends its headers and then trickles the
// body is cut off within the read timeout. None of it triggers a sync, and
// a good hook is served afterwards.
func TestWebhookRefusesAbuse(t *testing.T) {
	s, d, first, second := hookedDaemon(t)
	secret := []byte(hookSecret)

	big := bytes.Repeat([]byte("x"), 2<<20)
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"unsigned 2 MiB body", nil, http.StatusUnauthorized},
		{"signed 2 MiB body", map[string]string{webhook.HeaderGitHubSignature: webhook.Sign(secret, big)}, http.StatusRequestEntityTooLarge},
	} {
		code, err := postRaw(d.Addr, big, tt.headers)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, code, tt.want)
		}
	}

	cut, err := trickle(d.Addr, secret)
	if err != nil {
		t.Fatalf("trickled body: %v", err)
	}
	if limit := 2 * webhook.ReadTimeout; cut > limit {
		t.Errorf("a trickled body held its connection for %s, more than %s", cut.Round(time.Second), limit)
	}
	t.Logf("a trickled body was cut after %s (read timeout %s)", cut.Round(100*time.Millisecond), webhook.ReadTimeout)

	if c := s.status(t)["plimsoll.dev/commit"]; c != first {
		t.Fatalf("commit %s applied after refused hooks, want %s still", c, first)
	}
	if code := postHook(t, d, hookSecret); code != http.StatusAccepted {
		t.Fatalf("signed hook after the abuse: status %d, want 202", code)
	}
	s.waitForCommit(t, second)
}

// postRaw posts body to addr's /hook with headers and returns the status.
// The body is written as far as the server reads it, and the answer read
// whatever became of the write: a server that refuses a request before
// reading its body may stop reading.
func postRaw(addr string, body []byte, headers map[string]string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/hook", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _ = req.Write(conn) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, fmt.Errorf("read the answer to POST /hook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// trickle sends addr a signed hook's headers announcing a 1 KiB body, then
// one byte of it every 500ms, and returns how long the server kept the
// connection open. It gives up after a minute.
func trickle(addr string, secret []byte) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	body := bytes.Repeat([]byte("{"), 1024)
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST /hook HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n%s: %s\r\n\r\n",
		addr, len(body), webhook.HeaderGitHubSignature, webhook.Sign(secret, body))
	if err != nil {
		return 0, err
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for _, b := range body {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(start.Add(time.Minute))
	// Whatever the server answers (400 once the read times out), the
	// connection ends: read until it does.
	_, err = io.Copy(io.Discard, bufio.NewReader(conn))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return 0, fmt.Errorf("the connection was still open after a minute")
	}
	return time.Since(start), nil
}
