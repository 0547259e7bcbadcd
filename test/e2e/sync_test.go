//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// object names one object of a test's tree and how to read it.
type object struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func (o object) String() string { return fmt.Sprintf("%s %s/%s", o.gvr.Resource, o.namespace, o.name) }

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crds        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// resourceVersion returns the object's resourceVersion, "" if it is absent.
func resourceVersion(t *testing.T, o object) string {
	t.Helper()
	obj, err := suite.dynamic.Resource(o.gvr).Namespace(o.namespace).Get(context.Background(), o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("read %s: %v", o, err)
	}
	return obj.GetResourceVersion()
}

func resourceVersions(t *testing.T, objs []object) map[object]string {
	t.Helper()
	rvs := map[object]string{}
	for _, o := range objs {
		rvs[o] = resourceVersion(t, o)
	}
	return rvs
}

// firstTree is the first commit of the sync tests: a Namespace, ConfigMaps
// (one in that Namespace), a CRD and one of its resources, a Service and a
// Deployment.
type firstTree struct {
	ns, extraNS, group string
}

func newFirstTree(ns string) firstTree {
	return firstTree{ns: ns, extraNS: ns + "-extra", group: ns + ".e2e.plimsoll.dev"}
}

func (f firstTree) files() map[string]string {
	return map[string]string{
		"namespace.yaml": fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", f.extraNS),
		"config/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  color: blue\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  size: small\n",
		"config/extra.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: %s\ndata:\n  a: b\n", f.extraNS),
		"crd.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`, f.group),
		"widget.yaml":     fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n", f.group),
		"service.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n",
		"deployment.yaml": rollingDeployment(2, goodImage),
	}
}

func (f firstTree) objects() []object {
	return []object{
		{gvr: namespaces, name: f.extraNS},
		{gvr: configMaps, namespace: f.ns, name: "app"},
		{gvr: configMaps, namespace: f.ns, name: "other"},
		{gvr: configMaps, namespace: f.extraNS, name: "extra"},
		{gvr: crds, name: "widgets." + f.group},
		{gvr: f.widgets(), namespace: f.ns, name: "w1"},
		{gvr: services, namespace: f.ns, name: "web"},
		{gvr: deployments, namespace: f.ns, name: "web"},
	}
}

func (f firstTree) widgets() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: f.group, Version: "v1", Resource: "widgets"}
}

// cleanup deletes the cluster-scoped objects of the tree.
func (f firstTree) cleanup(t *testing.T) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = suite.dynamic.Resource(crds).Delete(ctx, "widgets."+f.group, metav1.DeleteOptions{})
		_ = suite.client.CoreV1().Namespaces().Delete(ctx, f.extraNS, metav1.DeleteOptions{})
	})
}

// TestSyncFirstCommit applies a first commit of every kind of object and
// checks the cluster and the sync status.
func TestSyncFirstCommit(t *testing.T) {
	s := newSyncTarget(t)
	tree := newFirstTree(s.ns)
	tree.cleanup(t)
	head := s.repo.Commit("first commit", tree.files())

	s.mustSync(t)

	for o, rv := range resourceVersions(t, tree.objects()) {
		if rv == "" {
			t.Errorf("%s was not applied", o)
		}
	}
	cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "blue" || cm.Labels["plimsoll.dev/sync"] != s.ns {
		t.Errorf("ConfigMap app = %v (err %v), want data color=blue and label plimsoll.dev/sync=%s", cm, err, s.ns)
	}
	st := s.status(t)
	if st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != head || st["plimsoll.dev/fetched-commit"] != head {
		t.Errorf("sync status = %v, want Synced at %s", st, head)
	}
	if want := fmt.Sprintf("applied %s \"first commit\": 8 objects", head[:7]); st["plimsoll.dev/message"] != want {
		t.Errorf("sync message %q, want %q", st["plimsoll.dev/message"], want)
	}
	waitForComplete(t, s.ns, "web", 2)
	if msgs := eventMessages(s.events(t), "Synced"); !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "8 objects, 8 created") }) {
		t.Errorf("Synced events %q, want one counting 8 objects created", msgs)
	}

	t.Log("a second sync of the same commit writes nothing")
	before := resourceVersions(t, tree.objects())
	statusBefore := resourceVersion(t, object{gvr: configMaps, namespace: s.ns, name: "plimsoll-sync-" + s.ns})
	s.mustSync(t)
	if after := resourceVersions(t, tree.objects()); !maps.Equal(before, after) {
		t.Errorf("resourceVersions changed by a no-op sync:\nbefore %v\nafter  %v", before, after)
	}
	if rv := resourceVersion(t, object{gvr: configMaps, namespace: s.ns, name: "plimsoll-sync-" + s.ns}); rv != statusBefore {
		t.Errorf("a no-op sync rewrote the status ConfigMap (resourceVersion %s, then %s)", statusBefore, rv)
	}
}

// TestSyncWritesOnlyWhatChanged changes one file, then deletes one, and
// checks that exactly their objects were written or pruned.
func TestSyncWritesOnlyWhatChanged(t *testing.T) {
	s := newSyncTarget(t)
	tree := newFirstTree(s.ns)
	tree.cleanup(t)
	files := tree.files()
	s.repo.Commit("first commit", files)
	s.mustSync(t)
	waitForComplete(t, s.ns, "web", 2) // the Deployment controller is done writing
	all := tree.objects()

	t.Log("a commit that changes one object of config/app.yaml writes that object only")
	before := resourceVersions(t, all)
	files["config/app.yaml"] = strings.Replace(files["config/app.yaml"], "color: blue", "color: green", 1)
	s.repo.Commit("paint it green", map[string]string{"config/app.yaml": files["config/app.yaml"]})
	s.mustSync(t)
	after := resourceVersions(t, all)
	app := object{gvr: configMaps, namespace: s.ns, name: "app"}
	for _, o := range all {
		changed := before[o] != after[o]
		if changed != (o == app) {
			t.Errorf("%s: resourceVersion %s -> %s; want a change only for %s", o, before[o], after[o], app)
		}
	}

	t.Log("a commit that deletes service.yaml prunes exactly the Service")
	before = after
	s.repo.Commit("drop the service", map[string]string{"service.yaml": ""})
	s.mustSync(t)
	after = resourceVersions(t, all)
	svc := object{gvr: services, namespace: s.ns, name: "web"}
	for _, o := range all {
		switch {
		case o == svc && after[o] != "":
			t.Errorf("%s still exists after its file was deleted", o)
		case o != svc && before[o] != after[o]:
			t.Errorf("%s: resourceVersion %s -> %s, want unchanged", o, before[o], after[o])
		}
	}
	if msgs := eventMessages(s.events(t), "Synced"); !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "0 created, 0 configured, 0 restored, 1 pruned") }) {
		t.Errorf("Synced events %q, want one counting exactly 1 pruned", msgs)
	}
}

func eventReasons(events []corev1.Event) []string {
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

// eventMessages returns the messages of the events with reason.
func eventMessages(events []corev1.Event, reason string) []string {
	var msgs []string
	for _, e := range events {
		if e.Reason == reason {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}
