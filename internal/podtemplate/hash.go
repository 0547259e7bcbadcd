package podtemplate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/contract"
)

// Hash returns the revision identity of a pod template: the first
// 10 hex digits of the SHA-256 of the JSON encoding of Normalize(t).
// encoding/json writes struct fields in a fixed order and map keys sorted,
// so the same template gives the same hash however its YAML was written.
//
// Two templates get the same hash when the API server would store them
// alike and the Deployment controller would not roll pods from one to the
// other, apart from what the controller itself adds (see Normalize).
// Any other change (an image, an env var, an argument, a resource, a label
// the user set, a volume) gives a new hash.
func Hash(t corev1.PodTemplateSpec) string {
	encoded, err := json.Marshal(Normalize(t))
	if err != nil {
		// A normalized template always encodes: it holds no channels,
		// functions or cycles, and no raw JSON (managedFields is dropped).
		panic(fmt.Sprintf("encode pod template: %v", err))
	}
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:])[:hashLength]
}

// Normalize returns a deep copy of t as the API server would store
// it, minus what plimsoll's controller adds, so that equal templates are
// equal values:
//
//   - the labels plimsoll.dev/workload, plimsoll.dev/color,
//     plimsoll.dev/serving and pod-template-hash, every annotation
//     starting with plimsoll.dev/, and metadata.managedFields (the API
//     server's bookkeeping) are dropped;
//   - every field the API server (v1.36) defaults in a Deployment's pod
//     template and t leaves out is filled in with its default, so that
//     writing a default out gives the same template as leaving it out:
//     restartPolicy Always, dnsPolicy ClusterFirst, schedulerName
//     default-scheduler, terminationGracePeriodSeconds 30, securityContext
//     {}; for every container terminationMessagePath /dev/termination-log,
//     terminationMessagePolicy File, imagePullPolicy (Always for an image
//     with the :latest tag or no tag and no digest, else IfNotPresent),
//     ports[].protocol TCP, env fieldRef apiVersion v1; for probes
//     timeoutSeconds 1, periodSeconds 10, successThreshold 1,
//     failureThreshold 3, httpGet path / and scheme HTTP; for volumes
//     defaultMode 420 (configMap, secret, downwardAPI, projected), emptyDir
//     for a volume with no source, and the rest of the API server's list;
//   - every resource quantity is rewritten in one canonical form of its
//     value: 1Gi, 1024Mi and 1073741824 are one quantity, as are 0.5 and
//     500m;
//   - every empty map or slice becomes nil: "labels: {}" and "args: []"
//     are no labels and no args.
//
// t is not modified.
func Normalize(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	n := *t.DeepCopy()
	n.ManagedFields = nil
	maps.DeleteFunc(n.Labels, func(key, _ string) bool { return controllerLabel(key) })
	maps.DeleteFunc(n.Annotations, func(key, _ string) bool { return strings.HasPrefix(key, contract.Prefix) })
	setPodSpecDefaults(&n.Spec)
	canonicalize(reflect.ValueOf(&n).Elem())
	return n
}

// Defaulted returns a deep copy of t with every field the API server
// (v1.36) defaults in a Deployment's pod template and t leaves out filled
// in with its default (see setPodSpecDefaults), and nothing else changed:
// no label or annotation dropped, no quantity or empty list rewritten. A
// template written from t is stored as Defaulted(t) gives it, unless t
// writes a quantity or an empty list in another form than the API server
// returns it, or an admission webhook changed it.
func Defaulted(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	d := *t.DeepCopy()
	setPodSpecDefaults(&d.Spec)
	return d
}

// Stamp returns a deep copy of t with its Hash written into the
// template annotation plimsoll.dev/template-hash, which does not count in
// the hash. Writing templates stamped lets LiveHash read the hash back from
// the live Deployment and from its ReplicaSets instead of recomputing it,
// so that a field added by a mutating admission webhook, or a default a
// newer API server fills in, does not make the live template look
// different from Git.
func Stamp(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	stamped := *t.DeepCopy()
	if stamped.Annotations == nil {
		stamped.Annotations = map[string]string{}
	}
	stamped.Annotations[contract.AnnotationTemplateHash] = Hash(t)
	return stamped
}

// LiveHash returns the hash of a template read from the cluster (the
// template of a live Deployment or of a ReplicaSet): its stamp (see Stamp)
// when it has one, else Hash(t).
func LiveHash(t corev1.PodTemplateSpec) string {
	if stamp := t.Annotations[contract.AnnotationTemplateHash]; stamp != "" {
		return stamp
	}
	return Hash(t)
}

// controllerLabel reports whether key is a template label the controller
// sets, not the user.
func controllerLabel(key string) bool {
	switch key {
	case contract.LabelWorkload, contract.LabelColor, contract.LabelServing, contract.LabelTrack, appsv1.DefaultDeploymentUniqueLabelKey:
		return true
	}
	return false
}

// canonicalize walks v, an addressable value of an API type, and makes
// every empty map and slice nil and every resource.Quantity canonical.
// Unexported fields are skipped: API types keep nothing in them but the
// internals of quantities and times.
func canonicalize(v reflect.Value) {
	if v.Type() == reflect.TypeFor[resource.Quantity]() {
		v.Set(reflect.ValueOf(canonicalQuantity(v.Interface().(resource.Quantity))))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			canonicalize(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if field := v.Field(i); field.CanSet() {
				canonicalize(field)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := range v.Len() {
			canonicalize(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		if !deepKind(v.Type().Elem().Kind()) {
			return // map[string]string and the like
		}
		// Map values are not addressable: walk a copy and put it back.
		for iter := v.MapRange(); iter.Next(); {
			value := reflect.New(iter.Value().Type()).Elem()
			value.Set(iter.Value())
			canonicalize(value)
			v.SetMapIndex(iter.Key(), value)
		}
	}
}

// deepKind reports whether values of kind k can hold a map, a slice or a
// quantity.
func deepKind(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.Struct, reflect.Slice, reflect.Map:
		return true
	}
	return false
}

// canonicalQuantity returns q in one form per value: its exact decimal
// value parsed again, which the encoder writes in the canonical decimal SI
// form. 1Gi -> 1073741824, 1024Mi -> 1073741824, 0.5 -> 500m, 1e3 -> 1k.
func canonicalQuantity(q resource.Quantity) resource.Quantity {
	c, err := resource.ParseQuantity(q.AsDec().String())
	if err != nil {
		return q // unreachable: a decimal number always parses
	}
	return c
}

// HashOf is the Hash of the pod template (spec.template) of obj, an
// object as a manifest or the API gives it (a StatefulSet's, a
// DaemonSet's); ok is false when it has none that reads as one.
func HashOf(obj map[string]any) (hash string, ok bool) {
	raw, found, _ := unstructured.NestedMap(obj, "spec", "template")
	var t corev1.PodTemplateSpec
	if !found || runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t) != nil {
		return "", false
	}
	return Hash(t), true
}
