package notify

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// at is the time of the notifications of the tests.
var at = time.Date(2026, 3, 14, 12, 30, 0, 0, time.UTC)

func pausedCanary() Notification {
	return Notification{Kind: KindRollout, Severity: SeverityInfo, Namespace: "shop", Workload: "api", Strategy: "canary",
		Phase: "Paused", Revision: 2, TemplateHash: "5d8f7c9b", Commit: "1a2b3c4d5e6f7a8b9c0d",
		Message: "canary step 2/5: 25% (1/4 pods serving), waiting for promote", Time: at}
}

func failedSync() Notification {
	return Notification{Kind: KindSync, Severity: SeverityError, Namespace: "plimsoll-system", Sync: "platform",
		Status: "Failed", Commit: "9f8e7d6c5b4a",
		Message: `commit 9f8e7d6 not applied (render failed; still running 1a2b3c4): broken.yaml, document 1: field metadata.name: <none>`, Time: at}
}

// TestWebhookBody: the JSON webhook gets the notification's fields by
// their documented names, empty ones left out, the time in UTC.
func TestWebhookBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    Notification
		want string
	}{
		{"rollout", pausedCanary(), `{"kind":"rollout","severity":"info","namespace":"shop","workload":"api","strategy":"canary",` +
			`"phase":"Paused","revision":2,"templateHash":"5d8f7c9b","commit":"1a2b3c4d5e6f7a8b9c0d",` +
			`"message":"canary step 2/5: 25% (1/4 pods serving), waiting for promote","time":"2026-03-14T12:30:00Z"}`},
		{"sync", failedSync(), `{"kind":"sync","severity":"error","namespace":"plimsoll-system","sync":"platform","status":"Failed",` +
			`"commit":"9f8e7d6c5b4a","message":"commit 9f8e7d6 not applied (render failed; still running 1a2b3c4): broken.yaml, document 1: field metadata.name: \u003cnone\u003e",` +
			`"time":"2026-03-14T12:30:00Z"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := FormatWebhook.encode(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tc.want {
				t.Errorf("body\n%s\nwant\n%s", body, tc.want)
			}
		})
	}
}

// TestSlackMessage: the whole story is in "text" (the commit added when
// the message does not name it, Slack's markup characters escaped); the
// attachment has the colour of the severity and the details in a fixed
// order.
func TestSlackMessage(t *testing.T) {
	rolledBack := pausedCanary()
	rolledBack.Phase, rolledBack.Severity, rolledBack.Message = PhaseRolledBack, SeverityError, "progress deadline exceeded"
	healthy := pausedCanary()
	healthy.Phase, healthy.Message = "Healthy", "revision 2 is serving"
	held := failedSync()
	held.Status, held.Severity, held.Message = "Held", SeverityWarning, "commit 9f8e7d6 held until 2026-03-16T08:00:00Z: deny 0 22 * * 5 62h"
	for _, tc := range []struct {
		name   string
		n      Notification
		text   string
		color  string
		fields []string
	}{
		{"paused canary", pausedCanary(),
			"*shop/api* revision 2 *Paused*: canary step 2/5: 25% (1/4 pods serving), waiting for promote (commit 1a2b3c4)",
			colorInfo, []string{"Namespace=shop", "Workload=api", "Strategy=canary", "Revision=2", "Commit=1a2b3c4", "Template hash=5d8f7c9b"}},
		{"rolled back", rolledBack,
			"*shop/api* revision 2 *RolledBack*: progress deadline exceeded (commit 1a2b3c4)", colorDanger, nil},
		{"healthy", healthy, "*shop/api* revision 2 *Healthy*: revision 2 is serving (commit 1a2b3c4)", colorGood, nil},
		{"failed sync", failedSync(),
			"*sync platform* *Failed*: commit 9f8e7d6 not applied (render failed; still running 1a2b3c4): broken.yaml, document 1: field metadata.name: &lt;none&gt;",
			colorDanger, []string{"Namespace=plimsoll-system", "Sync=platform", "Commit=9f8e7d6"}},
		{"held sync", held, "*sync platform* *Held*: commit 9f8e7d6 held until 2026-03-16T08:00:00Z: deny 0 22 * * 5 62h", colorWarning, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := FormatSlack.encode(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			var m slackMessage
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			if m.Text != tc.text {
				t.Errorf("text\n%s\nwant\n%s", m.Text, tc.text)
			}
			if len(m.Attachments) != 1 {
				t.Fatalf("%d attachments, want 1", len(m.Attachments))
			}
			a := m.Attachments[0]
			if a.Color != tc.color || a.Fallback != tc.text || a.TS != at.Unix() || a.Footer != "plimsoll" {
				t.Errorf("attachment %+v, want colour %s, the text as fallback, ts %d", a, tc.color, at.Unix())
			}
			if tc.fields == nil {
				return
			}
			var fields []string
			for _, f := range a.Fields {
				fields = append(fields, f.Title+"="+f.Value)
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("fields %v, want %v", fields, tc.fields)
			}
		})
	}
}
