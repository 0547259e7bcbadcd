package notify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// token stands for the secret part of a receiver's URL in the tests.
const token = "T0KEN-4f1d9c2e"

// TestReadReceiver: one http(s) URL per file, named after the file; a
// file that holds anything else is refused with an error naming the file
// and the problem, and never the content.
func TestReadReceiver(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"slack URL", "https://hooks.slack.com/services/T000/B000/" + token + "\n", ""},
		{"http with a query", "http://10.0.0.7:8080/hook?token=" + token, ""},
		{"empty", "  \n", "it is empty"},
		{"two lines", "https://a.example/" + token + "\nhttps://b.example/" + token, "more than one line"},
		{"not a URL", "https://a.example/%zz" + token, "does not parse"},
		{"ftp", "ftp://files.example/" + token, "not http or https"},
		{"no host", "https:///" + token, "names no host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "team-a")
			if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := ReadReceiver(FormatSlack, file)
			if tc.want == "" {
				if err != nil || r.Name != "slack/team-a" || r.URL != strings.TrimSpace(tc.content) {
					t.Fatalf("ReadReceiver = %s, %v; want slack/team-a with the file's URL", r, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadReceiver accepted %q", tc.content)
			}
			if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to name %s and say %q", err, file, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q shows the file's content", err)
			}
		})
	}
	if _, err := ReadReceiver(FormatWebhook, filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing file: %v, want an error naming it", err)
	}
}

// TestReceiverShowsNoURL: printed, logged or encoded, a receiver is its
// name and format.
func TestReceiverShowsNoURL(t *testing.T) {
	r := Receiver{Name: "webhook/ops", Format: FormatWebhook, URL: "https://hooks.example/" + token}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(r), fmt.Sprintf("%v %+v", r, []Receiver{r}), r.LogValue().String(), string(b)} {
		if strings.Contains(s, token) || !strings.Contains(s, "webhook/ops") {
			t.Errorf("%q: want the name and not the URL", s)
		}
	}
}

// TestCheckNames refuses two receivers named alike.
func TestCheckNames(t *testing.T) {
	a := Receiver{Name: "slack/team-a", Format: FormatSlack}
	b := Receiver{Name: "webhook/team-a", Format: FormatWebhook}
	if err := CheckNames([]Receiver{a, b}); err != nil {
		t.Errorf("distinct names refused: %v", err)
	}
	if err := CheckNames([]Receiver{a, b, a}); err == nil || !strings.Contains(err.Error(), `"slack/team-a"`) {
		t.Errorf("a name twice: %v, want an error naming it", err)
	}
}

// TestRedactor hides the URL and its secret parts, and leaves a short
// path alone.
func TestRedactor(t *testing.T) {
	raw := "https://user:" + token + "@hooks.example/services/" + token + "?sig=" + token
	got := redactorOf(raw).hide(fmt.Sprintf("Post %q: dial tcp hooks.example:443: refused; path /services/%s; query sig=%s", raw, token, token))
	if strings.Contains(got, token) {
		t.Errorf("hide left the token in %q", got)
	}
	if got := redactorOf("http://127.0.0.1:9/").hide("dial tcp 127.0.0.1:9/tcp: refused"); got != "dial tcp 127.0.0.1:9/tcp: refused" {
		t.Errorf("hide of a URL with path / changed %q", got)
	}
}
