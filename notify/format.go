package notify

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
)

// Format is how a receiver wants a notification: FormatWebhook or
// FormatSlack.
type Format string

// encode returns the body to post for n in format f.
func (f Format) encode(n Notification) ([]byte, error) {
	switch f {
	case FormatWebhook:
		return json.Marshal(n)
	case FormatSlack:
		return json.Marshal(slackMessageOf(n))
	}
	return nil, fmt.Errorf("encode a notification: unknown format %q", f)
}

// slackMessage is the body of a Slack incoming webhook. Text is all a
// reader needs (it is what a phone's notification and a client without
// attachments show); the attachment adds the colour bar and the details
// as fields, in a fixed order.
type slackMessage struct {
	Text        string            `json:"text"`
	Attachments []slackAttachment `json:"attachments"`
}

type slackAttachment struct {
	Color    string       `json:"color"`
	Fallback string       `json:"fallback"`
	Fields   []slackField `json:"fields"`
	Footer   string       `json:"footer"`
	// TS is when the change was seen (Unix seconds), so that a message
	// delivered late, after retries, still says when it happened.
	TS int64 `json:"ts"`
}

type slackField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// slackMessageOf renders n for Slack, e.g.
//
//	*shop/api* revision 2 *Paused*: canary step 2/5: 25% (1/4 pods serving), waiting for promote (commit 1a2b3c4)
//
// with the commit added when the message does not name it already.
func slackMessageOf(n Notification) slackMessage {
	text := fmt.Sprintf("*%s*", slackEscape(n.subject()))
	if n.Kind == KindRollout && n.Revision > 0 {
		text += fmt.Sprintf(" revision %d", n.Revision)
	}
	text += fmt.Sprintf(" *%s*: %s", slackEscape(n.state()), slackEscape(n.Message))
	if c := revision.Short(n.Commit); c != "" && !strings.Contains(n.Message, c) {
		text += fmt.Sprintf(" (commit %s)", c)
	}
	var fields []slackField
	add := func(title, value string) {
		if value != "" && value != "0" {
			fields = append(fields, slackField{Title: title, Value: slackEscape(value), Short: true})
		}
	}
	add("Namespace", n.Namespace)
	add("Workload", n.Workload)
	add("Sync", n.Sync)
	add("Strategy", n.Strategy)
	add("Revision", strconv.FormatInt(n.Revision, 10))
	add("Commit", revision.Short(n.Commit))
	add("Template hash", n.TemplateHash)
	return slackMessage{Text: text, Attachments: []slackAttachment{{
		Color: slackColor(n), Fallback: text, Fields: fields, Footer: "plimsoll", TS: n.Time.Unix(),
	}}}
}

// slackColor is the colour bar of n: red for an error, amber for a
// warning, green once a rollout is Healthy or a sync recovered, blue for
// a rollout on its way.
func slackColor(n Notification) string {
	switch {
	case n.Severity == SeverityError:
		return colorDanger
	case n.Severity == SeverityWarning:
		return colorWarning
	case n.Kind == KindRollout && n.Phase != contract.PhaseHealthy:
		return colorInfo
	}
	return colorGood
}

// slackEscape escapes the three characters Slack reads as markup, so that
// a message holding "<none>" or "a && b" shows as written instead of
// turning into a link or vanishing.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
