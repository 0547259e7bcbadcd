package main

import (
	"bytes"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkDecodePod decodes one pod as the rollout controller's pod
// informer receives it, in each of the two encodings the API server
// offers: JSON (the client's default) and protobuf (what protobuf(cfg)
// asks for). The pod is one of a Deployment's, as the simulated nodes run
// it: a container, the service account volume, four conditions and the
// managed fields of three writers. A rollout of 1,000 workloads of 10
// pods brings some 20,000 such events.
func BenchmarkDecodePod(b *testing.B) {
	pod := benchPod()
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			b.Fatalf("no serializer for %s", mediaType)
		}
		var buf bytes.Buffer
		if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(pod, &buf); err != nil {
			b.Fatalf("encode the pod as %s: %v", mediaType, err)
		}
		data := buf.Bytes()
		b.Run(mediaType, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out corev1.Pod
				if _, _, err := info.Serializer.Decode(data, nil, &out); err != nil {
					b.Fatal(err)
				}
				if out.Name != pod.Name {
					b.Fatalf("decoded pod %q, want %q", out.Name, pod.Name)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes/pod")
		})
	}
}

// benchPod is a Running, Ready pod of Deployment r-0001.
func benchPod() *corev1.Pod {
	fields := func(manager, operation string, n int) metav1.ManagedFieldsEntry {
		raw := `{"f:metadata":{"f:labels":{`
		for i := range n {
			raw += fmt.Sprintf(`"f:key-%d":{},`, i)
		}
		raw += `"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}`
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(operation),
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	ready := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "r-0001-7d9c6b5f4-x2k8p", GenerateName: "r-0001-7d9c6b5f4-", Namespace: "plimsoll-bench-rolling",
			UID: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", ResourceVersion: "123456789", CreationTimestamp: metav1.Now(),
			Labels: map[string]string{"app": "r-0001", "plimsoll.dev/workload": "r-0001", "pod-template-hash": "7d9c6b5f4"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "r-0001-7d9c6b5f4",
				UID: "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809", Controller: new(true), BlockOwnerDeletion: new(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{fields("kube-controller-manager", "Update", 3),
				fields("kwok", "Update", 6), fields("kube-scheduler", "Update", 1)},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:v2",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-abcde", ReadOnly: true,
					MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}}}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
			NodeName: "kwok-node-17", SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: new(int64(30)),
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{ready(corev1.PodInitialized), ready(corev1.PodReady), ready(corev1.ContainersReady), ready(corev1.PodScheduled)},
			HostIP:     "10.0.17.1", PodIP: "10.0.17.42", PodIPs: []corev1.PodIP{{IP: "10.0.17.42"}}, StartTime: new(metav1.Now()),
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.example/app:v2",
				ImageID: "registry.example/app@sha256:0123", ContainerID: "containerd://4567",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}},
			QOSClass: corev1.PodQOSBurstable,
		},
	}
}
