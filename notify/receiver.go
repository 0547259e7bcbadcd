package notify

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Receiver is where notifications go. Its URL usually holds a token (a
// Slack webhook's path is one): it is used to post and for nothing else.
// A Receiver prints, logs and encodes to JSON as its Name and Format
// only.
type Receiver struct {
	// Name names the receiver in logs and metrics: "<format>/<file name>",
	// e.g. "slack/team-a" for a URL read from .../team-a.
	Name   string
	Format Format
	URL    string `json:"-"`
}

// String returns the receiver's name, never its URL.
func (r Receiver) String() string { return r.Name }

// LogValue logs the receiver as its name, never its URL.
func (r Receiver) LogValue() slog.Value { return slog.StringValue(r.Name) }

// ReadReceiver reads the URL of a receiver of format f from file: one
// http or https URL, alone in the file (a trailing newline is fine), as a
// Secret key mounted as a file holds it. The error names the file and
// what is wrong, never the file's content.
func ReadReceiver(f Format, file string) (Receiver, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return Receiver{}, fmt.Errorf("read the %s receiver's URL: %w", f, err)
	}
	text := strings.TrimSpace(string(raw))
	var problem string
	switch u, perr := url.Parse(text); {
	case text == "":
		problem = "it is empty; want one http or https URL"
	case strings.ContainsAny(text, "\n\r"):
		problem = "it holds more than one line; want one http or https URL"
	case perr != nil:
		problem = "its URL does not parse" // the parse error quotes the URL
	case u.Scheme != "http" && u.Scheme != "https":
		problem = "its URL is not http or https"
	case u.Host == "":
		problem = "its URL names no host"
	}
	if problem != "" {
		return Receiver{}, fmt.Errorf("read the %s receiver's URL from %s: %s", f, file, problem)
	}
	return Receiver{Name: string(f) + "/" + filepath.Base(file), Format: f, URL: text}, nil
}

// CheckNames refuses two receivers of one name, which their logs and
// metrics could not tell apart.
func CheckNames(receivers []Receiver) error {
	seen := map[string]bool{}
	for _, r := range receivers {
		if seen[r.Name] {
			return fmt.Errorf("two %s receivers are named %q (their files' names): give the files different names", r.Format, r.Name)
		}
		seen[r.Name] = true
	}
	return nil
}

// redactor hides a receiver's URL, and each part of it that may be a
// token, in an error text. The sender never puts the URL in an error (it
// unwraps net/http's *url.Error, which quotes it); this is the second
// line of defence for texts it does not control.
type redactor []string

// redactorOf lists the secret-looking parts of raw: the whole URL, its
// user info, its path and its query. A part shorter than 4 characters
// (the path "/") hides nothing and would mangle the text.
func redactorOf(raw string) redactor {
	r := redactor{raw}
	if u, err := url.Parse(raw); err == nil {
		for _, part := range []string{u.User.String(), u.EscapedPath(), u.Path, u.RawQuery, u.Fragment} {
			if len(part) >= 4 {
				r = append(r, part)
			}
		}
	}
	return r
}

// hide returns s with every part of r replaced.
func (r redactor) hide(s string) string {
	for _, part := range r {
		s = strings.ReplaceAll(s, part, "[redacted]")
	}
	return s
}
