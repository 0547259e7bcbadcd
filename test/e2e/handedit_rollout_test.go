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
	head := s.repo.commit("web and api", tree)
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

// TestOneShotSyncRepairsServiceSelector removes by hand (kubectl patch)
// the key plimsoll puts in a Service's selector: the color of a
// blue-green workload's active and preview Services, the serving label of
// a canary's Service. With it gone the Service selects every color or
// track. A one-shot sync of the same commit, which changes nothing of the
// workload, puts the key back, since nothing follows a one-shot sync to
// do it later, and moves no Deployment's generation.
func TestOneShotSyncRepairsServiceSelector(t *testing.T) {
	parallel(t)
	const canary = "    plimsoll.dev/strategy: canary\n    plimsoll.dev/service: web\n    plimsoll.dev/steps: \"100%\"\n"
	for _, tc := range []struct {
		strategy string
		files    func(t *testing.T) map[string]string
		primary  string
		key      string
		want     map[string]string // each Service patched, to the key's value
	}{
		{"blue-green active", func(t *testing.T) map[string]string { return blueGreenExample(t, "v1", "30s") },
			"shop-blue", contract.LabelColor, map[string]string{"shop": "blue"}},
		{"blue-green preview", func(t *testing.T) map[string]string { return blueGreenExample(t, "v1", "30s") },
			"shop-blue", contract.LabelColor, map[string]string{"shop-preview": "blue"}},
		{"canary", func(t *testing.T) map[string]string { return switchedExample(t, "v1", canary) },
			"web", contract.LabelServing, map[string]string{"web": "true"}},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			parallel(t)
			s := newSyncTarget(t)
			s.repo.commit("v1", tc.files(t))
			s.mustSync(t, "--wait")
			waitForDeployment(t, s.ns, tc.primary, "revision 1 Healthy", phaseIs(1, "Healthy"))

			remove := fmt.Sprintf(`[{"op":"remove","path":"/spec/selector/%s"}]`, strings.ReplaceAll(tc.key, "/", "~1"))
			for name := range tc.want {
				kubectl(t, "patch", "service", name, "-n", s.ns, "--type=json", "-p", remove)
			}
			generations := deploymentGenerations(t, s.ns)
			s.mustSync(t)
			for name, want := range tc.want {
				if got := selector(t, s.ns, name); got[tc.key] != want {
					t.Errorf("after the one-shot sync Service %s selects %v, want %s=%s", name, got, tc.key, want)
				}
			}
			if after := deploymentGenerations(t, s.ns); !maps.Equal(after, generations) {
				t.Errorf("the repair moved Deployment generations: %v, then %v", generations, after)
			}
		})
	}
}
