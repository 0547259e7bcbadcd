package sync

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	fakedisco "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestWritable: a sync limited to namespaces plans (and so prunes) only the
// inventory entries in them; the others, a cluster-scoped one included,
// are left alone.
func TestWritable(t *testing.T) {
	inv := inventory.Inventory{}
	for _, e := range []inventory.Entry{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-b", Name: "b"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-c", Name: "c"},
		{APIVersion: "v1", Kind: "Namespace", Name: "team-a"},
	} {
		inv[e.Key()] = e
	}
	tests := []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{name: "unlimited", want: []string{"ConfigMap team-a/a", "ConfigMap team-b/b", "ConfigMap team-c/c", "Namespace team-a"}},
		{name: "limited", namespaces: []string{"team-a", "team-b"}, want: []string{"ConfigMap team-a/a", "ConfigMap team-b/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{Namespaces: tt.namespaces})
			var got []string
			for key := range s.writable(inv) {
				got = append(got, key.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("writable entries %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDescribeWaits is the status line of the prunes that wait: each named
// up to waitsNamed, the rest counted.
func TestDescribeWaits(t *testing.T) {
	wait := func(name string) apply.Waiting {
		return apply.Waiting{Key: manifest.Key{Kind: "ConfigMap", Namespace: "shop", Name: name},
			Referrers: []apply.Referrer{{Deployment: "web", Revision: "3", Phase: "Progressing", Via: []apply.Via{apply.ViaRollback}}}}
	}
	described := func(name string) string {
		return "ConfigMap shop/" + name + " (referenced by Deployment web, revision 3 Progressing; rollback target)"
	}
	var many []apply.Waiting
	var five []string
	for i := range 7 {
		many = append(many, wait(fmt.Sprintf("app-%d", i)))
		if i < 5 {
			five = append(five, described(fmt.Sprintf("app-%d", i)))
		}
	}
	tests := []struct {
		name  string
		waits []apply.Waiting
		want  string
	}{
		{"none", nil, ""},
		{"one", []apply.Waiting{wait("app-5g2h7")}, "1 prune waits: " + described("app-5g2h7")},
		{"two", []apply.Waiting{wait("a"), wait("b")}, "2 prunes wait: " + described("a") + ", " + described("b")},
		{"seven: five named", many, "7 prunes wait: " + strings.Join(five, ", ") + ", and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeWaits(tt.waits); got != tt.want {
				t.Errorf("describeWaits =\n %s\nwant\n %s", got, tt.want)
			}
		})
	}
}

// TestFailedShowsNoURLCredential: a sync that fails on an error naming a
// URL with credentials (a chart's archive pre-signed in its index)
// records, logs and reports it without them.
func TestFailedShowsNoURLCredential(t *testing.T) {
	var logged bytes.Buffer
	events := &recordedEvents{}
	s := New(Config{Name: "web", Log: slog.New(slog.NewTextHandler(&logged, nil)), Events: events,
		Store:   inventory.NewStore(fake.NewClientset(), "plimsoll", "web"),
		Applier: apply.New(apply.Config{Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(fakediscovery()))})})
	err := fmt.Errorf("render: read archive https://ci:hunter2@charts.example/web-1.0.0.tgz?X-Amz-Signature=s3cr3t&x=1: 403")
	st := s.failed(context.Background(), inventory.Status{}, "0123456789abcdef", "render", err)
	for what, text := range map[string]string{"status": st.Message, "log": logged.String(), "Event": strings.Join(events.messages, "\n")} {
		for _, secret := range []string{"hunter2", "s3cr3t"} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows %q: %s", what, secret, text)
			}
		}
		if !strings.Contains(text, "charts.example/web-1.0.0.tgz") {
			t.Errorf("the %s no longer names the archive: %s", what, text)
		}
	}
}

// recordedEvents keeps the messages of the Events recorded.
type recordedEvents struct{ messages []string }

func (r *recordedEvents) Event(_ context.Context, _ runtime.Object, _, _, message string) {
	r.messages = append(r.messages, message)
}

func fakediscovery() *fakedisco.FakeDiscovery {
	return &fakedisco.FakeDiscovery{Fake: &k8stesting.Fake{}}
}
