package ui

import (
	"net"
	"net/http"
	"slices"
	"strings"
)

// The headers of every answer. The Content-Security-Policy lets a page
// load only the view's own script, style sheet and live stream: no inline
// script or style, no other origin, no frame around it, no form to send.
const (
	contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// guard refuses every request the view must not answer, before next sees
// it, and sets the security headers of every answer:
//   - any method but GET (405): the view changes nothing, and nothing
//     about it takes a body;
//   - a Host that is neither an IP address, localhost nor one of hosts
//     (421): a page of another site whose name was pointed at the view's
//     address (DNS rebinding) is not the view's origin;
//   - an Origin that is not the view's own (403): another site's script
//     (a fetch, an EventSource on the live stream) gets nothing. Browsers
//     send no Origin with a plain GET of the same origin.
func guard(hosts []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		switch {
		case r.Method != http.MethodGet:
			h.Set("Allow", http.MethodGet)
			http.Error(w, "the web view is read-only: only GET is served; use the plimsoll CLI or kubectl to change anything", http.StatusMethodNotAllowed)
		case !allowedHost(r.Host, hosts):
			http.Error(w, "unknown host "+r.Host+": the web view answers to IP addresses, localhost and its --ui-host names", http.StatusMisdirectedRequest)
		case !sameOrigin(r):
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// allowedHost reports whether a request's Host names the view: an IP
// address, localhost, or one of hosts, with any port.
func allowedHost(hostport string, hosts []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	return host == "localhost" || net.ParseIP(host) != nil || slices.Contains(hosts, host)
}

// sameOrigin reports whether a request comes from the view's own pages:
// without an Origin (a navigation, a same-origin GET) or with the origin
// of the Host it was sent to; and, where the browser says so, not from
// another site.
func sameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
		return false
	}
	origin := r.Header.Get("Origin")
	return origin == "" || origin == "http://"+r.Host || origin == "https://"+r.Host
}
