//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// hotfixImage is what the tests below set by hand.
const hotfixImage = "registry.example/web:hotfix"

// canaryAPI is the Git manifest of canary workload "api" (2 replicas)
// behind Service "api".
const canaryAPI = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  annotations:
    plimsoll.dev/strategy: canary
    plimsoll.dev/service: api
    plimsoll.dev/steps: "50%, 100%"
spec:
  replicas: 2
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: ` + goodImage + `
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector: {app: api}
  ports:
  - port: 80
`

// TestRolloutRestoresTemplateEditedByHand checks that the rollout
// controller puts back a pod template changed with kubectl on the
// Deployment that runs Git's revision, on a rolling workload (web) and on
// a canary's stable Deployment (api):
//   - `kubectl set image`, `kubectl set env` and `kubectl set resources`
//     (a limit beside Git's fields) are undone: Git's image, no env var,
//     no limit, kubectl owning no field, the pods back on Git's image;
//   - it is the same revision (plimsoll.dev/revision stays 1), with a
//     TemplateRestored event on the Deployment;
//   - then nothing is written in a loop: the generation stays.
func TestRolloutRestoresTemplateEditedByHand(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	tree := baseTree()
	tree["deployment.yaml"] = rollingDeployment(2, goodImage)
	tree["api.yaml"] = canaryAPI
	head := s.repo.Commit("web and api", tree)
	kit.StartDaemon(t, s, "--interval", "1s")
	s.waitForCommit(t, head)
	waitForPhase(t, s.ns, "web", "Healthy")
	waitForPhase(t, s.ns, "api", "Healthy")

	t.Log("1. kubectl set image and set env on web, set image and set resources on api")
	kubectl(t, "set", "image", "deployment/web", "web="+hotfixImage, "-n", s.ns)
	kubectl(t, "set", "env", "deployment/web", "DEBUG=1", "-n", s.ns)
	kubectl(t, "set", "resources", "deployment/api", "--limits=cpu=500m", "-n", s.ns)
	kubectl(t, "set", "image", "deployment/api", "api="+hotfixImage, "-n", s.ns)

	for _, name := range []string{"web", "api"} {
		d := waitForDeployment(t, s.ns, name, "Git's template back and rolled out", func(d *appsv1.Deployment) bool {
			c := d.Spec.Template.Spec.Containers[0]
			st := d.Status
			return c.Image == goodImage && len(c.Env) == 0 && len(c.Resources.Limits) == 0 && st.ObservedGeneration >= d.Generation &&
				st.UpdatedReplicas == 2 && st.Replicas == 2 && st.AvailableReplicas == 2
		})
		if rev := d.Annotations["plimsoll.dev/revision"]; rev != "1" {
			t.Errorf("%s: revision %s after the restore, want 1: the same revision", name, rev)
		}
		checkNoKubectlFields(t, s.ns, "deployments", name, d.ManagedFields)
		if !hasEvent(t, s.ns, name, "TemplateRestored", "changed outside Git") {
			t.Errorf("%s: no TemplateRestored event", name)
		}
		selector := fmt.Sprintf("app=%s", name)
		waitFor(t, name+" pods all on Git's image", func(ctx context.Context) (bool, error) {
			ready, unready := podsByReadiness(t, s.ns, selector)
			return len(ready) == 2 && len(unready) == 0 && imagesOf(ready)[0] == goodImage && len(imagesOf(ready)) == 1, nil
		})
	}

	t.Log("2. quiet: no write in a loop")
	generations := map[string]int64{}
	for _, name := range []string{"web", "api"} {
		generations[name] = waitForDeployment(t, s.ns, name, "Healthy", func(d *appsv1.Deployment) bool {
			return d.Annotations["plimsoll.dev/phase"] == "Healthy"
		}).Generation
	}
	time.Sleep(5 * time.Second)
	for name, g := range generations {
		d, err := suite.client.AppsV1().Deployments(s.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Generation != g {
			t.Errorf("%s: generation %d, then %d: written again after the restore", name, g, d.Generation)
		}
	}
}

// TestOneShotSyncRepairsHandEdits changes by hand what a progressive
// workload at rest runs on: the key plimsoll puts in a Service's selector
// (kubectl patch; the color of a blue-green workload's active or preview
// Service, the serving label of a canary's Service), with which the
// Service selects every color or track, and the count of the Deployment
// that serves (kubectl scale). A one-shot sync of the same commit, which
// changes nothing of the workload, puts it back, as the daemon would at
// once, since nothing follows a one-shot sync to do it later; a selector
// repaired moves no Deployment's generation.
func TestOneShotSyncRepairsHandEdits(t *testing.T) {
	parallel(t)
	const canary = "    plimsoll.dev/strategy: canary\n    plimsoll.dev/service: web\n    plimsoll.dev/steps: \"100%\"\n"
	blueGreen := func(t *testing.T) map[string]string { return blueGreenExample(t, "v1", "30s") }
	canaryWeb := func(t *testing.T) map[string]string { return switchedExample(t, "v1", canary) }
	unselect := func(key string) string {
		return fmt.Sprintf(`[{"op":"remove","path":"/spec/selector/%s"}]`, strings.ReplaceAll(key, "/", "~1"))
	}
	for _, tc := range []struct {
		name    string
		files   func(t *testing.T) map[string]string
		primary string
		edit    []string // kubectl's arguments but the namespace
		service string   // the Service whose selector must hold key=value
		key     string
		value   string
	}{
		{"blue-green active Service", blueGreen, "shop-blue",
			[]string{"patch", "service", "shop", "--type=json", "-p", unselect(contract.LabelColor)}, "shop", contract.LabelColor, "blue"},
		{"blue-green preview Service", blueGreen, "shop-blue",
			[]string{"patch", "service", "shop-preview", "--type=json", "-p", unselect(contract.LabelColor)}, "shop-preview", contract.LabelColor, "blue"},
		{"canary Service", canaryWeb, "web",
			[]string{"patch", "service", "web", "--type=json", "-p", unselect(contract.LabelServing)}, "web", contract.LabelServing, "true"},
		{"blue-green active color scaled", blueGreen, "shop-blue",
			[]string{"scale", "deployment", "shop-blue", "--replicas=2"}, "", "", ""},
		{"canary stable scaled", canaryWeb, "web",
			[]string{"scale", "deployment", "web", "--replicas=2"}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parallel(t)
			s := newSyncTarget(t)
			s.repo.Commit("v1", tc.files(t))
			s.mustSync(t, "--wait")
			waitForDeployment(t, s.ns, tc.primary, "revision 1 Healthy", phaseIs(1, "Healthy"))

			kubectl(t, append(tc.edit, "-n", s.ns)...)
			generations := deploymentGenerations(t, s.ns)
			s.mustSync(t)
			if tc.service == "" {
				d := getDeployment(t, s.ns, tc.primary)
				if d == nil {
					t.Fatalf("Deployment %s is gone after the one-shot sync", tc.primary)
				}
				if got := *d.Spec.Replicas; got != 4 {
					t.Errorf("after the one-shot sync %s runs %d replicas, want Git's 4", tc.primary, got)
				}
				return
			}
			if got := selector(t, s.ns, tc.service); got[tc.key] != tc.value {
				t.Errorf("after the one-shot sync Service %s selects %v, want %s=%s", tc.service, got, tc.key, tc.value)
			}
			if after := deploymentGenerations(t, s.ns); !maps.Equal(after, generations) {
				t.Errorf("the repair moved Deployment generations: %v, then %v", generations, after)
			}
		})
	}
}
