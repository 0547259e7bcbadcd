package analysis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

const jobDoc = `
args: [{name: vus, value: "10"}]
metrics:
- name: k6
  job:
    template:
      spec:
        containers:
        - name: k6
          image: grafana/k6
          args: [run, --vus, "{{args.vus}}", "http://{{args.service}}.{{args.namespace}}"]
`

// setJobCondition gives the Job name in shop the condition typ, true.
func setJobCondition(t *testing.T, client *fake.Clientset, name string, typ batchv1.JobConditionType, reason, message string) {
	t.Helper()
	jobs := client.BatchV1().Jobs("shop")
	j, err := jobs.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read job %s: %v", name, err)
	}
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message})
	if _, err := jobs.UpdateStatus(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update job %s: %v", name, err)
	}
}

// jobsIn lists the Jobs of namespace shop.
func jobsIn(t *testing.T, client *fake.Clientset) []batchv1.Job {
	t.Helper()
	list, err := client.BatchV1().Jobs("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	return list.Items
}

func TestJob(t *testing.T) {
	client := fake.NewClientset()
	m := NewMeasurer(Config{Client: client})
	b := bindOne(t, "load", jobDoc, nil)
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-1"}
	run := testRun(0)
	run.Owner = owner

	// The first measurement creates the Job and is pending.
	first := m.Measure(context.Background(), b, run)
	jobs := jobsIn(t, client)
	if first.Outcome != strategies.OutcomePending || len(jobs) != 1 {
		t.Fatalf("first Measure = %s, %d jobs; want Pending and one Job", first.Outcome, len(jobs))
	}
	j := jobs[0]
	name := j.Name
	if first.Value != "job "+name+" running" {
		t.Errorf("first Measure value %q", first.Value)
	}
	if !strings.HasPrefix(name, "web-k6-abc123def0-") || !strings.HasSuffix(name, "-0") || len(name) > 63 {
		t.Errorf("job name %q, want web-k6-abc123def0-<run>-0", name)
	}
	if j.Labels[contract.LabelWorkload] != "web" || j.Labels[contract.LabelAnalysis] != "load" {
		t.Errorf("job labels %v", j.Labels)
	}
	if len(j.OwnerReferences) != 1 || j.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("job owners %v, want the Deployment", j.OwnerReferences)
	}
	if *j.Spec.BackoffLimit != 0 || *j.Spec.TTLSecondsAfterFinished != 3600 || j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job spec: backoffLimit %d, ttl %d, restartPolicy %s; want 0, 3600, Never",
			*j.Spec.BackoffLimit, *j.Spec.TTLSecondsAfterFinished, j.Spec.Template.Spec.RestartPolicy)
	}
	if got := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " "); got != "run --vus 10 http://web-svc.shop" {
		t.Errorf("job args %q", got)
	}

	// A second look (a restarted controller, the same Index) finds the same
	// Job, still running.
	again := NewMeasurer(Config{Client: client}).Measure(context.Background(), b, run)
	if again.Outcome != strategies.OutcomePending || len(jobsIn(t, client)) != 1 {
		t.Errorf("second Measure = %s with %d jobs, want Pending and still one Job", again.Outcome, len(jobsIn(t, client)))
	}

	setJobCondition(t, client, name, batchv1.JobComplete, "", "")
	done := m.Measure(context.Background(), b, run)
	if done.Outcome != strategies.OutcomeSuccessful || done.Value != "job "+name+" succeeded" {
		t.Errorf("Measure of a complete job = %s %q", done.Outcome, done.Value)
	}

	// The next measurement is another Job.
	next := m.Measure(context.Background(), b, testRun(1))
	jobs = jobsIn(t, client)
	if next.Outcome != strategies.OutcomePending || len(jobs) != 2 {
		t.Fatalf("Measure of index 1 = %s with %d jobs, want Pending and two", next.Outcome, len(jobs))
	}
	second := jobs[0].Name
	if second == name {
		second = jobs[1].Name
	}
	setJobCondition(t, client, second, batchv1.JobFailed, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	failed := m.Measure(context.Background(), b, testRun(1))
	if failed.Outcome != strategies.OutcomeFailed || failed.Value != "job "+second+" failed" ||
		failed.Message != "BackoffLimitExceeded: Job has reached the specified backoff limit" {
		t.Errorf("Measure of a failed job = %s %q %q", failed.Outcome, failed.Value, failed.Message)
	}
}

func TestJobAlreadyThere(t *testing.T) {
	client := fake.NewClientset()
	b := bindOne(t, "load", jobDoc, nil)
	name := jobName(b, testRun(0))
	// Another replica created the Job between our read and our create.
	client.PrependReactor("get", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		client.ReactionChain = client.ReactionChain[1:]
		return true, nil, apierrors.NewNotFound(batchv1.Resource("jobs"), name)
	})
	existing := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	if err := client.Tracker().Add(existing); err != nil {
		t.Fatal(err)
	}
	got := NewMeasurer(Config{Client: client}).Measure(context.Background(), b, testRun(0))
	if got.Outcome != strategies.OutcomeSuccessful {
		t.Errorf("Measure = %s %q %q, want the existing Job's success", got.Outcome, got.Value, got.Message)
	}
}

func TestJobErrors(t *testing.T) {
	b := bindOne(t, "load", jobDoc, nil)
	got := NewMeasurer(Config{}).Measure(context.Background(), b, testRun(0))
	if got.Outcome != strategies.OutcomeError || !strings.Contains(got.Message, "no Kubernetes client") {
		t.Errorf("Measure without a client = %s %q", got.Outcome, got.Message)
	}
	client := fake.NewClientset()
	client.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	got = NewMeasurer(Config{Client: client}).Measure(context.Background(), b, testRun(0))
	if got.Outcome != strategies.OutcomeError || !strings.Contains(got.Message, "create job web-k6-") || !strings.Contains(got.Message, "quota exceeded") {
		t.Errorf("Measure with a failing create = %s %q", got.Outcome, got.Message)
	}
}

func TestJobName(t *testing.T) {
	b := bindOne(t, "load", jobDoc, nil)
	base := testRun(3)
	name := jobName(b, base)
	tests := []struct {
		name string
		run  func(r *Run)
		b    func(b *Bound)
		same bool
	}{
		{"same run, same index", func(*Run) {}, func(*Bound) {}, true},
		{"another stage", func(r *Run) { r.Stage = "step 3" }, func(*Bound) {}, false},
		{"a run started again", func(r *Run) { r.Started = r.Started.Add(1) }, func(*Bound) {}, false},
		{"another index", func(r *Run) { r.Index = 4 }, func(*Bound) {}, false},
		{"another revision", func(*Run) {}, func(b *Bound) { b.Hash = "fff0000000" }, false},
		{"another analysis' metric of the same name", func(*Run) {}, func(b *Bound) { b.Spec.Name = "other/k6" }, false},
		{"a later now", func(r *Run) { r.Now = r.Now.Add(6 * time.Hour) }, func(*Bound) {}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, bb := base, b
			tc.run(&r)
			tc.b(&bb)
			if got := jobName(bb, r); (got == name) != tc.same {
				t.Errorf("jobName = %q, first %q; same = %v, want %v", got, name, got == name, tc.same)
			}
		})
	}
	// Long names are cut to 63 characters, keeping hash, run and index.
	long := b
	long.Name = "load-test-with-a-rather-long-name"
	r := base
	r.Workload = "checkout-frontend-eu-west-primary"
	r.Index = 12
	got := jobName(long, r)
	if len(got) != 63 || !strings.HasPrefix(got, "checkout-frontend-eu-west-primary-load-") || !strings.Contains(got, "-abc123def0-") || !strings.HasSuffix(got, "-12") {
		t.Errorf("jobName = %q (%d characters)", got, len(got))
	}
}
