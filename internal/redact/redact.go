// Package redact removes the credentials written into URLs from text
// bound for people: logs, Events, status annotations, notifications and
// the web view. A URL may carry a credential in two places: its user info
// ("https://user:password@host/", or a token as the user) and its query
// or fragment ("?access_token=...", a pre-signed "X-Amz-Signature=...").
// Both are replaced with Marker; the rest of the URL stays as it was
// written, so that a message still says which host and path failed.
//
// net/http already hides the password of the URL quoted in a *url.Error
// (as "user:***@"), but neither the user nor a token in the query, and a
// message that formats a URL itself hides nothing: this package is the one
// place that does, for every URL of a text.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Marker replaces a credential.
const Marker = "[redacted]"

// Query parameters whose values are credentials. A parameter is one when
// its name, lower-cased and with "-" read as "_", is one of
// credentialNames or ends with one of credentialSuffixes: "token",
// "access_token", "X-Amz-Security-Token", "api_key", "apikey", "key",
// "password", "client_secret", "signature", "X-Amz-Signature",
// "X-Amz-Credential", "sig" (an Azure SAS) and the like. A name such as
// "monkey" is redacted too: hiding a value too many loses a detail, one
// too few leaks a credential.
var (
	credentialNames    = []string{"sig", "auth", "authorization", "pass", "pwd", "jwt"}
	credentialSuffixes = []string{"token", "key", "password", "passwd", "secret", "signature", "credential"}
)

// urlPattern finds the URLs of a text: a scheme, "://", and everything up
// to a space, a quote or an angle bracket (net/http quotes the URL of a
// *url.Error, `Get "https://...": ...`).
var urlPattern = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")

// trailing are the characters that end a sentence around a URL rather
// than the URL: "GET https://host/x: status 500".
const trailing = ".,:;!?)"

// URL returns raw with its credentials replaced by Marker: the whole user
// info, and the value of each query or fragment parameter whose name says
// it is a credential (token, api_key, password, X-Amz-Signature ...). A URL without credentials comes back
// as it is, byte for byte; so does a text that is not a URL. Redacting
// twice changes nothing more.
//
//	https://ci:s3cret@example.com/status?token=abc&region=eu
//	https://[redacted]@example.com/status?token=[redacted]&region=eu
func URL(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return raw
	}
	head, rest := raw[:i+len("://")], raw[i+len("://"):]
	// The authority ends at the first "/", "?" or "#", and its user info
	// at the last "@" inside it, as net/url reads it.
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			rest = Marker + rest[at:]
		}
	} else if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = Marker + rest[at:]
	}
	fragment := ""
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest, fragment = rest[:h], "#"+parameters(rest[h+1:])
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest = rest[:q+1] + parameters(rest[q+1:])
	}
	return head + rest + fragment
}

// Text returns s with every URL in it redacted as URL does.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		kept := strings.TrimRight(u, trailing)
		return URL(kept) + u[len(kept):]
	})
}

// Error returns err when its text holds no credential of a URL, and
// otherwise an error whose text is Text(err.Error()) and that unwraps to
// err, so that errors.Is and errors.As still classify it. Only the
// redacted error's own text is safe to show, not the texts of its causes.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := Text(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redactedError is an error shown redacted that still wraps its cause.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// parameters redacts the values of the credential parameters of a query
// (or a fragment) "a=1&token=abc", keeping every other byte.
func parameters(query string) string {
	if query == "" {
		return query
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if name, _, ok := strings.Cut(p, "="); ok && isCredential(name) {
			parts[i] = name + "=" + Marker
		}
	}
	return strings.Join(parts, "&")
}

// isCredential reports whether a query parameter named name (as written,
// perhaps percent-encoded) holds a credential.
func isCredential(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	if slices.Contains(credentialNames, name) {
		return true
	}
	return slices.ContainsFunc(credentialSuffixes, func(s string) bool { return strings.HasSuffix(name, s) })
}
