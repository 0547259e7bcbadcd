//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// metadataWorkloads are the examples TestGitDroppedMetadataGoes syncs,
// one of each strategy, by their workload's name.
var metadataWorkloads = map[string]string{"web": "rolling", "api": "canary", "shop": "blue-green"}

// metadataTree is the three examples in one tree, each Deployment with
// the label team=payments and the annotation owner=alice when extra is
// set.
func metadataTree(t *testing.T, extra bool) map[string]string {
	t.Helper()
	files := map[string]string{}
	for name, dir := range metadataWorkloads {
		var replace []string
		if extra {
			labels := fmt.Sprintf("\n  labels:\n    app: %s\n", name)
			with := strings.TrimSuffix(labels, "\n") + "\n    team: payments\n"
			if dir == "rolling" {
				with += "  annotations:\n    owner: alice\n"
			} else {
				replace = append(replace, "\n  annotations:\n", "\n  annotations:\n    owner: alice\n")
			}
			replace = append(replace, labels, with)
		}
		for file, text := range example(t, dir, replace...) {
			files[dir+"/"+file] = text
		}
	}
	return files
}

// TestGitDroppedMetadataGoes drops a label and an annotation from each
// Deployment in Git, one workload of each strategy, and checks that both
// go from every live Deployment of the workload without a new revision,
// as an apply removes what it no longer sends; a label set with kubectl
// and the Deployment controller's revision annotation stay, being
// another writer's.
func TestGitDroppedMetadataGoes(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("with team and owner", metadataTree(t, true))
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. every Deployment of the three workloads Healthy at revision 1, with Git's team label and owner annotation")
	deploys := workloadDeployments(t, s.ns, "revision 1 Healthy everywhere", func(d *appsv1.Deployment) bool {
		return d.Annotations["plimsoll.dev/revision"] == "1" && d.Annotations["plimsoll.dev/phase"] == "Healthy"
	})
	for _, d := range deploys {
		if d.Labels["team"] != "payments" || d.Annotations["owner"] != "alice" {
			t.Fatalf("Deployment %s: label team=%q, annotation owner=%q; want Git's payments and alice",
				d.Name, d.Labels["team"], d.Annotations["owner"])
		}
	}
	patch := []byte(`{"metadata":{"labels":{"by-hand":"yes"}}}`)
	if _, err := suite.client.AppsV1().Deployments(s.ns).Patch(context.Background(), "api", types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatalf("label api by hand: %v", err)
	}

	t.Log("2. Git drops both: they go from every Deployment, the revision stays 1")
	s.repo.Commit("without team and owner", metadataTree(t, false))
	deploys = workloadDeployments(t, s.ns, "no team label or owner annotation left", func(d *appsv1.Deployment) bool {
		_, team := d.Labels["team"]
		_, owner := d.Annotations["owner"]
		return !team && !owner
	})
	for _, d := range deploys {
		if d.Annotations["plimsoll.dev/revision"] != "1" || d.Annotations["plimsoll.dev/phase"] != "Healthy" {
			t.Errorf("Deployment %s: revision %s, phase %s; want revision 1 Healthy still", d.Name,
				d.Annotations["plimsoll.dev/revision"], d.Annotations["plimsoll.dev/phase"])
		}
		if *d.Spec.Replicas > 0 && d.Annotations["deployment.kubernetes.io/revision"] == "" {
			t.Errorf("Deployment %s lost the Deployment controller's revision annotation", d.Name)
		}
		if d.Name == "api" && d.Labels["by-hand"] != "yes" {
			t.Errorf("Deployment api: label by-hand=%q, want kubectl's yes kept", d.Labels["by-hand"])
		}
	}
}

// workloadDeployments waits until every Deployment of metadataWorkloads
// in ns, at least one per workload, meets cond, and returns them.
func workloadDeployments(t *testing.T, ns, describe string, cond func(d *appsv1.Deployment) bool) []appsv1.Deployment {
	t.Helper()
	var out []appsv1.Deployment
	waitFor(t, describe, func(ctx context.Context) (bool, error) {
		list, err := suite.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if ctx.Err() != nil {
			return false, nil // the deadline: the last miss says what was left
		}
		if err != nil {
			return false, err
		}
		out = out[:0]
		seen := map[string]bool{}
		for _, d := range list.Items {
			workload := d.Labels["plimsoll.dev/workload"]
			if _, ok := metadataWorkloads[workload]; !ok {
				continue
			}
			if !cond(&d) {
				// Not an error: the wait goes on, and names it if it times out.
				return false, fmt.Errorf("Deployment %s: labels %v, annotations %v", d.Name, d.Labels, d.Annotations)
			}
			seen[workload] = true
			out = append(out, d)
		}
		return len(seen) == len(metadataWorkloads), nil
	})
	slices.SortFunc(out, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
	return out
}
