package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/internal/redact"
)

// request sends the request of w and makes its answer a result: a JSON
// answer is decoded (numbers are float64) and w.JSONPath, if any, picks
// the result from it; any other answer is the result as a string. A
// status other than 2xx is an error naming it. The values of Secret
// headers, read from namespace now, are added to r; errors show the URL
// with its credentials redacted.
func (m *Measurer) request(ctx context.Context, w *Web, namespace string, r *redactor) (any, error) {
	shown := redact.URL(w.URL)
	var body io.Reader
	if w.Method == methodPost && w.Body != "" {
		body = strings.NewReader(w.Body)
	}
	req, err := http.NewRequestWithContext(ctx, w.Method, w.URL, body)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("prepare %s %s: %w", w.Method, shown, err))
	}
	if body != nil && json.Valid([]byte(w.Body)) {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range w.Headers {
		v := h.Value
		if h.Secret != nil {
			if v, err = m.secretValue(ctx, namespace, *h.Secret); err != nil {
				return nil, fmt.Errorf("header %s: %w", h.Name, err)
			}
			r.add(v)
		}
		req.Header.Set(h.Name, v)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, redact.Error(err) // *url.Error: `GET "http://...": dial tcp ...`
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s %s: %w", w.Method, shown, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("%s %s: status %s", w.Method, shown, resp.Status)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			msg += " (redirects are not followed)"
		}
		if snippet := strings.TrimSpace(string(raw)); snippet != "" {
			msg += ": " + clip(snippet, maxValue)
		}
		return nil, errors.New(msg)
	}
	if len(raw) > maxBody {
		return nil, fmt.Errorf("%s %s: the answer is larger than %d bytes", w.Method, shown, maxBody)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		if w.JSONPath != "" {
			return nil, fmt.Errorf("%s %s: the answer is not JSON, so jsonPath %s cannot apply", w.Method, shown, w.JSONPath)
		}
		return string(raw), nil
	}
	if w.JSONPath == "" {
		return doc, nil
	}
	return pick(doc, w.JSONPath)
}

// pick is what path finds in doc: the one value found, or a list of them
// when it finds several. Finding nothing is an error.
func pick(doc any, path string) (any, error) {
	jp, err := compileJSONPath(path)
	if err != nil {
		return nil, fmt.Errorf("jsonPath %s: %w", path, err)
	}
	jp.AllowMissingKeys(false)
	found, err := jp.FindResults(doc)
	if err != nil {
		return nil, fmt.Errorf("jsonPath %s: %w", path, err)
	}
	var values []any
	for _, set := range found {
		for _, v := range set {
			if v.IsValid() && v.CanInterface() {
				values = append(values, v.Interface())
			}
		}
	}
	switch len(values) {
	case 0:
		return nil, fmt.Errorf("jsonPath %s found nothing in the answer", path)
	case 1:
		return values[0], nil
	}
	return values, nil
}

// secretValue reads the key of ref from its Secret in namespace.
func (m *Measurer) secretValue(ctx context.Context, namespace string, ref SecretKeyRef) (string, error) {
	if m.cfg.Client == nil {
		return "", errors.New("read Secret: no Kubernetes client configured")
	}
	s, err := m.cfg.Client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read Secret %s/%s: %w", namespace, ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		if sv, ok := s.StringData[ref.Key]; ok {
			return sv, nil
		}
		return "", fmt.Errorf("read Secret %s/%s: no key %q", namespace, ref.Name, ref.Key)
	}
	return string(v), nil
}
