package analysis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// job takes a measurement of a job metric: it creates the measurement's
// Job unless it exists, and reads what became of it. Complete is
// Successful, Failed is Failed, anything else Pending: the controller
// looks again shortly, with the same Index, and so the same Job.
func (m *Measurer) job(ctx context.Context, b Bound, run Run) (outcome strategies.Outcome, value, message string) {
	if m.cfg.Client == nil {
		return strategies.OutcomeError, "", "run a Job: no Kubernetes client configured"
	}
	name := jobName(b, run)
	jobs := m.cfg.Client.BatchV1().Jobs(run.Namespace)
	j, err := jobs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		j, err = jobs.Create(ctx, newJob(name, b, run), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			j, err = jobs.Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return strategies.OutcomeError, "", fmt.Sprintf("create job %s: %v", name, err)
		}
	}
	if err != nil {
		return strategies.OutcomeError, "", fmt.Sprintf("read job %s: %v", name, err)
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return strategies.OutcomeSuccessful, "job " + name + " succeeded", ""
		case batchv1.JobFailed:
			return strategies.OutcomeFailed, "job " + name + " failed", strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return strategies.OutcomePending, "job " + name + " running", ""
}

// jobName is the name of the Job of measurement run.Index of b:
// "<workload>-<metric>-<hash>-<run>-<index>", where <run> is 6 hex digits
// of a digest of the workload, the metric's "<analysis>/<metric>", the
// run's stage and start. Without <run>, the first measurement of "step 3"
// would find the Job of the first measurement of "step 1" (same revision,
// index 0) and take its result as its own; the digest also tells apart two
// analyses' metrics of one name, and two workloads whose names are cut.
//
// The name has at most 63 characters, as the Job controller puts it in a
// label of its pods. Workload "checkout-frontend-eu-west", metric
// "load-test", hash "5d4f8c7b9a", index 12: the suffix
// "-5d4f8c7b9a-1a2b3c-12" is 21 characters, the prefix 35, 56 in all.
// With metric "load-test-with-a-long-name" the prefix is 52, 73 in all, so
// the prefix is cut to 63-21 = 42: "checkout-frontend-eu-west-load-test-with-a".
func jobName(b Bound, run Run) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{
		run.Workload, b.Spec.Name, run.Stage, run.Started.UTC().Format(time.RFC3339Nano),
	}, "\x00")))
	suffix := "-" + hex.EncodeToString(sum[:])[:runDigestLen] + "-" + strconv.Itoa(run.Index)
	if h := strings.ToLower(b.Hash); h != "" {
		suffix = "-" + h[:min(len(h), maxHashInName)] + suffix
	}
	prefix := strings.ToLower(run.Workload + "-" + b.Name)
	if len(prefix)+len(suffix) > maxJobName {
		prefix = strings.TrimRight(prefix[:maxJobName-len(suffix)], "-.")
	}
	return prefix + suffix
}

// newJob is the Job name of b for run: b's spec with backoffLimit 0,
// ttlSecondsAfterFinished 3600 and restartPolicy Never unless the spec
// sets them, labelled with the workload and the analysis, owned by
// run.Owner.
func newJob(name string, b Bound, run Run) *batchv1.Job {
	spec := b.Job.DeepCopy()
	if spec.BackoffLimit == nil {
		spec.BackoffLimit = ptr.To[int32](0)
	}
	if spec.TTLSecondsAfterFinished == nil {
		spec.TTLSecondsAfterFinished = ptr.To(jobTTL)
	}
	if spec.Template.Spec.RestartPolicy == "" {
		spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: run.Namespace,
			Labels: map[string]string{
				contract.LabelWorkload: labelValue(run.Workload),
				contract.LabelAnalysis: labelValue(b.Analysis),
			},
		},
		Spec: *spec,
	}
	if run.Owner != nil {
		j.OwnerReferences = []metav1.OwnerReference{*run.Owner}
	}
	return j
}

// labelValue is s cut to fit a label value: at most 63 characters, ending
// in a letter or digit.
func labelValue(s string) string {
	if len(s) <= maxLabelValue {
		return s
	}
	return strings.TrimRight(s[:maxLabelValue], "-_.")
}
