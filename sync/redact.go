package sync

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"

	"plimsoll.dev/plimsoll/internal/redact"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Redaction of Secret values.
const (
	// redacted replaces a Secret value found in a message.
	redacted = "[redacted]"
	// minSecretLen is the shortest value redacted: shorter ones would
	// mangle ordinary words of every message and reveal little.
	minSecretLen = 4
)

// redactor removes the values of the commit's Secrets from text bound for
// logs, Events, annotations and metrics. Errors from the API server may
// quote what they reject; a Secret's value must never travel with them.
type redactor struct {
	values []string // longest first, so a value inside another goes second
}

func newRedactor(objs []manifest.Object, decrypted ...string) *redactor {
	r := &redactor{}
	add := func(v string) {
		if len(v) >= minSecretLen {
			r.values = append(r.values, v)
		}
	}
	for _, v := range decrypted {
		add(v)
		add(base64.StdEncoding.EncodeToString([]byte(v)))
	}
	for _, o := range objs {
		gvk := o.Obj.GroupVersionKind()
		if gvk.Group != "" || gvk.Kind != "Secret" {
			continue
		}
		if data, ok := o.Obj.Object["data"].(map[string]any); ok {
			for _, v := range data {
				s, _ := v.(string)
				add(s)
				if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
					add(string(raw))
				}
			}
		}
		if data, ok := o.Obj.Object["stringData"].(map[string]any); ok {
			for _, v := range data {
				s, _ := v.(string)
				add(s)
				add(base64.StdEncoding.EncodeToString([]byte(s)))
			}
		}
	}
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
	return r
}

// text returns s with every Secret value replaced, and the credentials
// of its URLs (a Helm hook's or an admission webhook's error may quote
// one).
func (r *redactor) text(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return redact.Text(s)
}

// err returns err, or an error of the same text with Secret values and
// the credentials of URLs replaced when it held any. The replacement loses the error chain, which
// is only used for classification before redaction.
func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := r.text(msg); clean != msg {
		return errors.New(clean)
	}
	return err
}
