package podtemplate

import (
	"reflect"
	"regexp"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plimsoll.dev/plimsoll/contract"
)

// gitTemplate is a pod template as a user writes it in Git.
const gitTemplate = `
metadata:
  labels:
    app: web
    tier: frontend
  annotations:
    team: payments
spec:
  containers:
  - name: web
    image: registry.example.com/web:1.4.2
    args: ["--port=8080"]
    env:
    - name: MODE
      value: prod
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    ports:
    - containerPort: 8080
    resources:
      requests:
        cpu: 100m
        memory: 128Mi
    readinessProbe:
      httpGet:
        path: /healthz
        port: 8080
  volumes:
  - name: config
    configMap:
      name: web-config
  - name: scratch
    emptyDir: {}
  - name: tls
    secret:
      secretName: web-tls
  - name: token
    projected:
      sources:
      - serviceAccountToken:
          path: token
`

// reorderedTemplate is gitTemplate with every map written in another order.
const reorderedTemplate = `
spec:
  volumes:
  - configMap:
      name: web-config
    name: config
  - emptyDir: {}
    name: scratch
  - secret:
      secretName: web-tls
    name: tls
  - projected:
      sources:
      - serviceAccountToken:
          path: token
    name: token
  containers:
  - resources:
      requests:
        memory: 128Mi
        cpu: 100m
    readinessProbe:
      httpGet:
        port: 8080
        path: /healthz
    ports:
    - containerPort: 8080
    env:
    - value: prod
      name: MODE
    - valueFrom:
        fieldRef:
          fieldPath: status.podIP
      name: POD_IP
    args: ["--port=8080"]
    image: registry.example.com/web:1.4.2
    name: web
metadata:
  annotations:
    team: payments
  labels:
    tier: frontend
    app: web
`

// liveTemplate is gitTemplate as the API server returns it in the live
// Deployment: every default filled in, the controller's labels and
// annotations added, memory written 0.125Gi instead of 128Mi.
const liveTemplate = `
metadata:
  creationTimestamp: null
  labels:
    app: web
    tier: frontend
    plimsoll.dev/workload: web
    pod-template-hash: 5d9f8b7c4
  annotations:
    team: payments
    plimsoll.dev/template-hash: 5d9f01c2aa
spec:
  containers:
  - name: web
    image: registry.example.com/web:1.4.2
    imagePullPolicy: IfNotPresent
    args: ["--port=8080"]
    env:
    - name: MODE
      value: prod
    - name: POD_IP
      valueFrom:
        fieldRef:
          apiVersion: v1
          fieldPath: status.podIP
    ports:
    - containerPort: 8080
      protocol: TCP
    resources:
      requests:
        cpu: 100m
        memory: 0.125Gi
    readinessProbe:
      httpGet:
        path: /healthz
        port: 8080
        scheme: HTTP
      timeoutSeconds: 1
      periodSeconds: 10
      successThreshold: 1
      failureThreshold: 3
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  dnsPolicy: ClusterFirst
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  terminationGracePeriodSeconds: 30
  volumes:
  - name: config
    configMap:
      name: web-config
      defaultMode: 420
  - name: scratch
    emptyDir: {}
  - name: tls
    secret:
      secretName: web-tls
      defaultMode: 420
  - name: token
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3600
`

func TestTemplateHashIgnoresHowTheTemplateIsWritten(t *testing.T) {
	base := Hash(parseTemplate(t, gitTemplate))
	if !regexp.MustCompile(`^[0-9a-f]{10}$`).MatchString(base) {
		t.Fatalf("Hash = %q, want 10 hex digits", base)
	}

	tests := []struct {
		name string
		edit func(*corev1.PodTemplateSpec)
	}{
		{"same YAML", func(*corev1.PodTemplateSpec) {}},
		{"pod restartPolicy Always", func(p *corev1.PodTemplateSpec) { p.Spec.RestartPolicy = corev1.RestartPolicyAlways }},
		{"pod dnsPolicy ClusterFirst", func(p *corev1.PodTemplateSpec) { p.Spec.DNSPolicy = corev1.DNSClusterFirst }},
		{"pod schedulerName default-scheduler", func(p *corev1.PodTemplateSpec) { p.Spec.SchedulerName = "default-scheduler" }},
		{"pod terminationGracePeriodSeconds 30", func(p *corev1.PodTemplateSpec) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(30)) }},
		{"pod securityContext {}", func(p *corev1.PodTemplateSpec) { p.Spec.SecurityContext = &corev1.PodSecurityContext{} }},
		{"container terminationMessagePath", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
		}},
		{"container terminationMessagePolicy File", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageReadFile
		}},
		{"container imagePullPolicy IfNotPresent for a tagged image", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
		}},
		{"port protocol TCP", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolTCP }},
		{"probe timings", func(p *corev1.PodTemplateSpec) {
			probe := p.Spec.Containers[0].ReadinessProbe
			probe.TimeoutSeconds, probe.PeriodSeconds, probe.SuccessThreshold, probe.FailureThreshold = 1, 10, 1, 3
		}},
		{"probe httpGet scheme HTTP", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTP
		}},
		{"configMap volume defaultMode 420", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes[0].ConfigMap.DefaultMode = ptrTo(int32(0644))
		}},
		{"secret volume defaultMode 420", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes[2].Secret.DefaultMode = ptrTo(int32(0644))
		}},
		{"projected volume defaultMode 420 and token expiration 3600", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes[3].Projected.DefaultMode = ptrTo(int32(0644))
			p.Spec.Volumes[3].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptrTo(int64(3600))
		}},
		{"env fieldRef apiVersion v1", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.APIVersion = "v1"
		}},
		{"volume without a source is an emptyDir", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes[1].EmptyDir = nil
		}},
		{"empty args, command and nodeSelector", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Command = []string{}
			p.Spec.NodeSelector = map[string]string{}
			p.Spec.Tolerations = []corev1.Toleration{}
		}},
		{"empty limits", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{}
		}},
		{"memory as 0.125Gi", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("0.125Gi")
		}},
		{"cpu as 0.1", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
		}},
		{"cpu as 0.0999, rounded up to 100m", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.0999")
		}},
		{"controller label plimsoll.dev/workload", func(p *corev1.PodTemplateSpec) { p.Labels[contract.LabelWorkload] = "web" }},
		{"controller label plimsoll.dev/color", func(p *corev1.PodTemplateSpec) { p.Labels[contract.LabelColor] = "green" }},
		{"controller label plimsoll.dev/serving", func(p *corev1.PodTemplateSpec) { p.Labels[contract.LabelServing] = "true" }},
		{"label pod-template-hash", func(p *corev1.PodTemplateSpec) { p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "5d9f8b7c4" }},
		{"controller annotations", func(p *corev1.PodTemplateSpec) {
			p.Annotations[contract.AnnotationTemplateHash] = "7c4e1a2b9f"
			p.Annotations["plimsoll.dev/anything"] = "x"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := parseTemplate(t, gitTemplate)
			tt.edit(&tmpl)
			if got := Hash(tmpl); got != base {
				t.Errorf("Hash = %s, want %s as without the change", got, base)
			}
		})
	}

	for _, doc := range []struct{ name, yaml string }{
		{"keys in another order", reorderedTemplate},
		{"as the API server returns it", liveTemplate},
	} {
		t.Run(doc.name, func(t *testing.T) {
			if got := Hash(parseTemplate(t, doc.yaml)); got != base {
				t.Errorf("Hash = %s, want %s", got, base)
			}
		})
	}
}

func TestTemplateHashChangesWithEveryRealChange(t *testing.T) {
	base := Hash(parseTemplate(t, gitTemplate))
	tests := []struct {
		name string
		edit func(*corev1.PodTemplateSpec)
	}{
		{"image", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "registry.example.com/web:1.4.3" }},
		{"env value", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Env[0].Value = "staging" }},
		{"env var added", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "DEBUG", Value: "1"})
		}},
		{"env order", func(p *corev1.PodTemplateSpec) {
			env := p.Spec.Containers[0].Env
			env[0], env[1] = env[1], env[0]
		}},
		{"args", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Args = []string{"--port=9090"} }},
		{"cpu request", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}},
		{"memory limit", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
		}},
		{"user label", func(p *corev1.PodTemplateSpec) { p.Labels["tier"] = "backend" }},
		{"user label under plimsoll.dev/ that the controller does not set", func(p *corev1.PodTemplateSpec) {
			p.Labels["plimsoll.dev/team"] = "payments"
		}},
		{"user annotation", func(p *corev1.PodTemplateSpec) { p.Annotations["team"] = "search" }},
		{"volume source", func(p *corev1.PodTemplateSpec) { p.Spec.Volumes[0].ConfigMap.Name = "web-config-v2" }},
		{"volume added", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cache"})
		}},
		{"configMap defaultMode 0600", func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes[0].ConfigMap.DefaultMode = ptrTo(int32(0600))
		}},
		{"probe path", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].ReadinessProbe.HTTPGet.Path = "/ready" }},
		{"probe port", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("http")
		}},
		{"probe period 5", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].ReadinessProbe.PeriodSeconds = 5 }},
		{"imagePullPolicy Always for a tagged image", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
		}},
		{"terminationGracePeriodSeconds 60", func(p *corev1.PodTemplateSpec) {
			p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(60))
		}},
		{"port protocol UDP", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP }},
		{"automountServiceAccountToken false", func(p *corev1.PodTemplateSpec) {
			p.Spec.AutomountServiceAccountToken = ptrTo(false)
		}},
		{"sidecar container", func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1.30"})
		}},
	}
	seen := map[string]string{base: "the original"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := parseTemplate(t, gitTemplate)
			tt.edit(&tmpl)
			got := Hash(tmpl)
			if other, dup := seen[got]; dup {
				t.Errorf("Hash = %s, the same as %s", got, other)
			}
			seen[got] = tt.name
		})
	}
}

func TestTemplateHashPullPolicyFollowsTheImageTag(t *testing.T) {
	tests := []struct {
		name   string
		image  string
		policy corev1.PullPolicy // the one that hashes the same as leaving it out
		other  corev1.PullPolicy
	}{
		{"untagged image pulls Always", "nginx", corev1.PullAlways, corev1.PullIfNotPresent},
		{":latest pulls Always", "nginx:latest", corev1.PullAlways, corev1.PullIfNotPresent},
		{"tagged image pulls IfNotPresent", "nginx:1.27", corev1.PullIfNotPresent, corev1.PullAlways},
		{"digest pulls IfNotPresent", "nginx@sha256:" + sha256Hex, corev1.PullIfNotPresent, corev1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			implicit := webTemplate(tt.image)
			explicit := webTemplate(tt.image)
			explicit.Spec.Containers[0].ImagePullPolicy = tt.policy
			other := webTemplate(tt.image)
			other.Spec.Containers[0].ImagePullPolicy = tt.other
			if Hash(implicit) != Hash(explicit) {
				t.Errorf("%s with pull policy %s hashes apart from leaving it out", tt.image, tt.policy)
			}
			if Hash(implicit) == Hash(other) {
				t.Errorf("%s with pull policy %s hashes like leaving it out", tt.image, tt.other)
			}
		})
	}
}

func TestNormalizeTemplateLeavesItsArgumentAlone(t *testing.T) {
	tmpl := parseTemplate(t, gitTemplate)
	tmpl.Labels[contract.LabelWorkload] = "web"
	before := tmpl.DeepCopy()
	n := Normalize(tmpl)
	if !reflect.DeepEqual(&tmpl, before) {
		t.Fatalf("Normalize modified its argument")
	}
	if _, ok := n.Labels[contract.LabelWorkload]; ok {
		t.Errorf("normalized labels = %v, want no %s", n.Labels, contract.LabelWorkload)
	}
	if n.Spec.RestartPolicy != corev1.RestartPolicyAlways || n.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("normalized template lacks defaults: restartPolicy %q, imagePullPolicy %q",
			n.Spec.RestartPolicy, n.Spec.Containers[0].ImagePullPolicy)
	}
	if !reflect.DeepEqual(Normalize(n), n) {
		t.Errorf("Normalize(Normalize(t)) != Normalize(t)")
	}
}

func TestStampAndLiveHash(t *testing.T) {
	git := parseTemplate(t, gitTemplate)
	hash := Hash(git)

	stamped := Stamp(git)
	if got := stamped.Annotations[contract.AnnotationTemplateHash]; got != hash {
		t.Errorf("stamp = %q, want %s", got, hash)
	}
	if _, ok := git.Annotations[contract.AnnotationTemplateHash]; ok {
		t.Errorf("Stamp modified its argument")
	}
	if got := Hash(stamped); got != hash {
		t.Errorf("Hash(Stamp(t)) = %s, want %s", got, hash)
	}

	// A webhook adds a sidecar to the live template: the stamp still tells
	// which Git template it is.
	mutated := *stamped.DeepCopy()
	mutated.Spec.Containers = append(mutated.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1.30"})
	if got := LiveHash(mutated); got != hash {
		t.Errorf("LiveHash(stamped, mutated) = %s, want the stamp %s", got, hash)
	}
	if got := LiveHash(parseTemplate(t, liveTemplate)); got != "5d9f01c2aa" {
		t.Errorf("LiveHash(liveTemplate) = %s, want its stamp", got)
	}
	if got := LiveHash(git); got != hash {
		t.Errorf("LiveHash(unstamped) = %s, want Hash %s", got, hash)
	}
}

func TestDefaultedIsTheTemplateAsStored(t *testing.T) {
	git := parseTemplate(t, gitTemplate)
	before := git.DeepCopy()
	// liveTemplate, less what the controller adds and with memory
	// written as Git writes it: the defaults alone.
	want := parseTemplate(t, liveTemplate)
	delete(want.Labels, contract.LabelWorkload)
	delete(want.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(want.Annotations, contract.AnnotationTemplateHash)
	want.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")

	got := Defaulted(git)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Defaulted(gitTemplate) =\n%+v\nwant\n%+v", got.Spec, want.Spec)
	}
	if !reflect.DeepEqual(&git, before) {
		t.Errorf("Defaulted modified its argument")
	}
	if !reflect.DeepEqual(Defaulted(got), got) {
		t.Errorf("Defaulted(Defaulted(t)) != Defaulted(t)")
	}
}
