package rollout

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/strategies"
)

// settle plays the controllers: every Deployment runs a ReplicaSet of
// its template, "<deployment>-<template hash>", controlled by it, which
// runs that many Ready pods named "<replica set>-p<i>", controlled by it,
// and reports them all available and its rollout complete; a Deployment's
// other ReplicaSets scale to 0 at once. Ownership is kept as the
// Kubernetes controllers keep it: a paused Deployment makes no new
// ReplicaSet; a ReplicaSet adopts an orphan pod with its labels before it
// makes one; what a deleted owner controlled goes with it, unless it was
// deleted with the orphan propagation policy, which leaves it without an
// owner (see orphaned). Every Service's EndpointSlice lists the Ready pods
// its selector selects. Pods keep the labels the rollout controller
// patched.
func (k *cluster) settle() {
	k.t.Helper()
	deploys, rsets, pods := k.listAll()
	// The garbage collector.
	for name, rs := range rsets {
		if ref := metav1.GetControllerOf(rs); ref != nil && deploys[ref.Name] == nil {
			if k.orphaned["deployments/"+ref.Name] {
				rs.OwnerReferences = nil
				k.update(rs)
			} else {
				k.remove("replicasets", name)
				delete(rsets, name)
			}
		}
	}
	for name, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && rsets[ref.Name] == nil {
			if k.orphaned["replicasets/"+ref.Name] {
				p.OwnerReferences = nil
				k.update(p)
			} else {
				k.remove("pods", name)
				delete(pods, name)
			}
		}
	}
	// The Deployment and ReplicaSet controllers.
	for _, name := range slices.Sorted(maps.Keys(deploys)) {
		d := deploys[name]
		k.claim(d, rsets)
		hash := replicaSetHash(d.Spec.Template)
		current := d.Name + "-" + hash
		for _, rsName := range slices.Sorted(maps.Keys(rsets)) {
			if rs := rsets[rsName]; metav1.IsControlledBy(rs, d) && strategies.SameTemplate(rs.Spec.Template, d.Spec.Template) {
				current = rsName // the template's ReplicaSet, adopted or made
				break
			}
		}
		n := *d.Spec.Replicas
		if rsets[current] == nil && d.Spec.Paused {
			// A paused Deployment makes no ReplicaSet, but scales the
			// newest it has (by name here) to its count: what a hand-over
			// must leave it none of.
			for _, rsName := range slices.Sorted(maps.Keys(rsets)) {
				if metav1.IsControlledBy(rsets[rsName], d) {
					current = rsName
				}
			}
		}
		if rsets[current] == nil && !d.Spec.Paused {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: current, Namespace: "shop",
				Labels:          withLabel(d.Spec.Template.Labels, strategies.LabelPodTemplateHash, hash),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
				Spec: appsv1.ReplicaSetSpec{Replicas: &n, Template: *d.Spec.Template.DeepCopy()}}
			rs.Spec.Template.Labels = rs.Labels
			created, err := k.client.AppsV1().ReplicaSets("shop").Create(k.ctx, rs, metav1.CreateOptions{})
			if err != nil {
				k.t.Fatal(err)
			}
			rsets[current] = created
		}
		revised := false
		if rs := rsets[current]; rs != nil && metav1.IsControlledBy(rs, d) && strategies.SameTemplate(rs.Spec.Template, d.Spec.Template) {
			revised = k.revise(d, rs, rsets)
		}
		running := int32(0)
		for rsName, rs := range rsets {
			if !metav1.IsControlledBy(rs, d) {
				continue
			}
			want := int32(0)
			if rsName == current {
				want = n
			}
			running += k.runPods(rs, want, pods)
		}
		progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
		if d.Spec.Paused {
			// A paused Deployment's condition says so, and stays.
			progressing = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: reasonPaused}
			if c := strategies.ProgressCondition(d); c != nil && c.Reason == reasonPaused {
				progressing = *c
			}
		}
		status := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: running, UpdatedReplicas: running, ReadyReplicas: running,
			AvailableReplicas: running, Conditions: []appsv1.DeploymentCondition{progressing}}
		if revised || fmt.Sprint(d.Status) != fmt.Sprint(status) {
			d.Status = status
			if _, err := k.client.AppsV1().Deployments("shop").UpdateStatus(k.ctx, d, metav1.UpdateOptions{}); err != nil {
				k.t.Fatal(err)
			}
		}
	}
	live := map[string]corev1.Pod{}
	for name, p := range pods {
		live[name] = *p
	}
	k.settleEndpoints(live)
}

// revise plays the Deployment controller's revisions for d and rs, the
// ReplicaSet of its template: rs gets the revision after the latest of
// d's other ReplicaSets, when it has an earlier one, with d's
// annotations copied in the same update, and d takes rs's revision. It
// reports whether d's changed.
func (k *cluster) revise(d *appsv1.Deployment, rs *appsv1.ReplicaSet, rsets map[string]*appsv1.ReplicaSet) bool {
	const key = strategies.AnnotationDeploymentRevision
	latest := int64(0)
	for name, other := range rsets {
		if name != rs.Name && metav1.IsControlledBy(other, d) {
			latest = max(latest, strategies.DeploymentRevision(other))
		}
	}
	if strategies.DeploymentRevision(rs) <= latest {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		for name, value := range d.Annotations {
			if strategies.Copied(name) {
				rs.Annotations[name] = value
			}
		}
		rs.Annotations[key] = strconv.FormatInt(latest+1, 10)
		k.update(rs)
	}
	if d.Annotations[key] == rs.Annotations[key] {
		return false
	}
	metav1.SetMetaDataAnnotation(&d.ObjectMeta, key, rs.Annotations[key])
	return true
}

// replicaSetHash names the ReplicaSet of template t, as the Deployment
// controller does, by a hash of all of it: labels (a canary's track)
// included.
func replicaSetHash(t corev1.PodTemplateSpec) string {
	raw, err := json.Marshal(t)
	if err != nil {
		panic(err)
	}
	h := fnv.New32a()
	h.Write(raw)
	return fmt.Sprintf("%010x", h.Sum32())
}

// claim plays the Deployment controller's ReplicaSet ownership for d: it
// lets go of a ReplicaSet it controls that its selector no longer selects
// (a hand-over's held-out ones), and adopts an orphan that it selects.
func (k *cluster) claim(d *appsv1.Deployment, rsets map[string]*appsv1.ReplicaSet) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		k.t.Fatal(err)
	}
	for _, rsName := range slices.Sorted(maps.Keys(rsets)) {
		rs := rsets[rsName]
		switch selected := sel.Matches(labels.Set(rs.Labels)); {
		case metav1.IsControlledBy(rs, d) && !selected:
			rs.OwnerReferences = nil
			k.update(rs)
		case metav1.GetControllerOf(rs) == nil && selected && d.DeletionTimestamp == nil:
			rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
			k.update(rs)
		}
	}
}

// controls reports whether Deployment d controls ReplicaSet name.
func (k *cluster) controls(d *appsv1.Deployment, name string) bool {
	k.t.Helper()
	rs, err := k.client.AppsV1().ReplicaSets("shop").Get(k.ctx, name, metav1.GetOptions{})
	return err == nil && metav1.IsControlledBy(rs, d)
}

// replicaSetOf returns the ReplicaSet d controls that runs its template,
// nil for none.
func (k *cluster) replicaSetOf(d *appsv1.Deployment) *appsv1.ReplicaSet {
	k.t.Helper()
	_, rsets, _ := k.listAll()
	for _, rs := range rsets {
		if metav1.IsControlledBy(rs, d) && strategies.SameTemplate(rs.Spec.Template, d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// controlled counts the ReplicaSets Deployment d controls.
func (k *cluster) controlled(d *appsv1.Deployment) int {
	k.t.Helper()
	_, rsets, _ := k.listAll()
	n := 0
	for _, rs := range rsets {
		if metav1.IsControlledBy(rs, d) {
			n++
		}
	}
	return n
}

// runPods keeps want Ready pods of ReplicaSet rs in pods (by name): its
// own, then orphans with its template's labels, adopted, then new ones;
// it deletes the rest of its own. It returns how many run.
func (k *cluster) runPods(rs *appsv1.ReplicaSet, want int32, pods map[string]*corev1.Pod) int32 {
	sel := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var own []string
	for name, p := range pods {
		switch ref := metav1.GetControllerOf(p); {
		case ref != nil && ref.Name == rs.Name:
			own = append(own, name)
		case ref == nil && sel.Matches(labels.Set(p.Labels)) && int32(len(own)) < want:
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
			k.update(p)
			own = append(own, name)
		}
	}
	slices.Sort(own)
	for i := 0; int32(len(own)) < want; i++ {
		name := fmt.Sprintf("%s-p%d", rs.Name, i)
		if pods[name] != nil {
			continue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			Labels: maps.Clone(rs.Spec.Template.Labels), Annotations: maps.Clone(rs.Spec.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		created, err := k.client.CoreV1().Pods("shop").Create(k.ctx, p, metav1.CreateOptions{})
		if err != nil {
			k.t.Fatal(err)
		}
		pods[name] = created
		own = append(own, name)
	}
	for _, name := range own[min(int(want), len(own)):] {
		k.remove("pods", name)
		delete(pods, name)
	}
	if *rs.Spec.Replicas != want {
		rs.Spec.Replicas = &want
		k.update(rs)
	}
	return min(want, int32(len(own)))
}

// listAll reads the Deployments, ReplicaSets and pods of namespace shop, by
// name.
func (k *cluster) listAll() (map[string]*appsv1.Deployment, map[string]*appsv1.ReplicaSet, map[string]*corev1.Pod) {
	k.t.Helper()
	deploys, rsets, pods := map[string]*appsv1.Deployment{}, map[string]*appsv1.ReplicaSet{}, map[string]*corev1.Pod{}
	dl, err := k.client.AppsV1().Deployments("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for i := range dl.Items {
		deploys[dl.Items[i].Name] = &dl.Items[i]
	}
	rl, err := k.client.AppsV1().ReplicaSets("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for i := range rl.Items {
		rsets[rl.Items[i].Name] = &rl.Items[i]
	}
	pl, err := k.client.CoreV1().Pods("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for i := range pl.Items {
		pods[pl.Items[i].Name] = &pl.Items[i]
	}
	return deploys, rsets, pods
}

// update writes obj, a ReplicaSet or a pod of namespace shop, as it is.
func (k *cluster) update(obj runtime.Object) {
	k.t.Helper()
	var err error
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		_, err = k.client.AppsV1().ReplicaSets("shop").Update(k.ctx, o, metav1.UpdateOptions{})
	case *corev1.Pod:
		_, err = k.client.CoreV1().Pods("shop").Update(k.ctx, o, metav1.UpdateOptions{})
	}
	if err != nil {
		k.t.Fatal(err)
	}
}

// remove deletes the ReplicaSet or pod name of namespace shop.
func (k *cluster) remove(resource, name string) {
	k.t.Helper()
	var err error
	switch resource {
	case "replicasets":
		err = k.client.AppsV1().ReplicaSets("shop").Delete(k.ctx, name, metav1.DeleteOptions{})
	case "pods":
		err = k.client.CoreV1().Pods("shop").Delete(k.ctx, name, metav1.DeleteOptions{})
	}
	if err != nil {
		k.t.Fatal(err)
	}
}

// withLabel is l with k=v added, a copy.
func withLabel(l map[string]string, key, v string) map[string]string {
	out := maps.Clone(l)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = v
	return out
}

// settleEndpoints writes each Service's EndpointSlice: the pods of live
// its selector selects, all Ready.
func (k *cluster) settleEndpoints(live map[string]corev1.Pod) {
	k.t.Helper()
	services, err := k.client.CoreV1().Services("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for _, svc := range services.Items {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var names []string
		for name, p := range live {
			if sel.Matches(labels.Set(p.Labels)) {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-x", Namespace: "shop",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}}, AddressType: discoveryv1.AddressTypeIPv4}
		for _, name := range names {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name}})
		}
		old, err := k.client.DiscoveryV1().EndpointSlices("shop").Get(k.ctx, slice.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			_, err = k.client.DiscoveryV1().EndpointSlices("shop").Create(k.ctx, slice, metav1.CreateOptions{})
		case fmt.Sprint(old.Endpoints) != fmt.Sprint(slice.Endpoints):
			_, err = k.client.DiscoveryV1().EndpointSlices("shop").Update(k.ctx, slice, metav1.UpdateOptions{})
		}
		if err != nil {
			k.t.Fatal(err)
		}
	}
}
