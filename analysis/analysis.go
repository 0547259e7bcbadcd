// Package analysis reads, checks and measures the analyses defined in Git:
// ConfigMaps labelled plimsoll.dev/analysis whose data key analysis.yaml
// holds the metrics that judge a revision, as Argo Rollouts'
// AnalysisTemplate or Flagger's metric checks do, without a custom
// resource.
//
// The sync calls Parse on every analysis ConfigMap of a commit and Check on
// every Deployment that names analyses, before anything of the commit is
// applied. The rollout controller calls Bind with the revision it judges,
// and a Measurer takes each measurement the tally in package strategies
// asks for: a Prometheus query, a web request or a Kubernetes Job, judged
// by the metric's conditions.
package analysis

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// Built-in arguments, defaults and limits.
const (
	// The built-in arguments, always there as {{args.NAME}}; a document
	// may not declare them.
	ArgWorkload   = "workload"
	ArgNamespace  = "namespace"
	ArgService    = "service"
	ArgRevision   = "revision"
	ArgHash       = "hash"
	ArgStableHash = "stable-hash"

	// Metric defaults, as in Argo Rollouts' AnalysisTemplate.
	defaultInterval              = 30 * time.Second
	defaultCount                 = 1
	defaultConsecutiveErrorLimit = 4
	defaultTimeout               = 10 * time.Second

	// The web methods.
	methodGet  = "GET"
	methodPost = "POST"

	// The providers, as the document names them.
	providerPrometheus = "prometheus"
	providerWeb        = "web"
	providerJob        = "job"

	// jobTTL is how long a finished Job stays (ttlSecondsAfterFinished):
	// an hour to read its logs.
	jobTTL int32 = 3600

	// maxJobName is the longest Job name: the Job controller puts it in the
	// job-name label of its pods, and a label value has at most 63
	// characters.
	maxJobName = 63
	// maxLabelValue is the longest label value.
	maxLabelValue = 63
	// runDigestLen is how many hex digits of a digest tell apart the Jobs
	// of two runs that share workload, metric and hash: 6 digits are 24
	// bits, 1 in 16 million.
	runDigestLen = 6

	// maxHashInName is the most of the template hash a Job name holds:
	// all of plimsoll's 10 hex digits.
	maxHashInName = 10

	// Timeouts of the default HTTP client; each measurement is bounded by
	// its metric's timeout besides, and clientTimeout bounds a request
	// whatever that is.
	dialTimeout         = 5 * time.Second
	keepAlive           = 30 * time.Second
	tlsHandshakeTimeout = 5 * time.Second
	idleConnTimeout     = 90 * time.Second
	clientTimeout       = 2 * time.Minute

	// maxValue and maxMessage bound a Measurement's Value and Message, which
	// go into the plimsoll.dev/analysis-run annotation.
	maxValue   = 256
	maxMessage = 512
	// maxBody is the largest web answer read: 1 MiB.
	maxBody = 1 << 20
	// maxNodes bounds the YAML nodes of a document, aliases expanded, so an
	// alias bomb (a few lines that expand to billions of nodes) is refused
	// rather than expanded. A large analysis has a few hundred.
	maxNodes = 100000
	// maxDepth bounds how deep a document nests: a real one is about 12
	// deep (metrics, a job's containers, their env...).
	maxDepth = 64

	// redacted replaces a secret value found in a measurement.
	redacted = "[redacted]"
	// minSecretLen is the shortest secret value redacted: shorter ones
	// would mangle ordinary words and reveal little.
	minSecretLen = 4

	// dataField is the document's place in the ConfigMap, in front of
	// every error Parse returns.
	dataField = `data["` + contract.AnalysisKey + `"]`
)

// builtins are the built-in argument names in the order errors list them.
var builtins = []string{ArgWorkload, ArgNamespace, ArgService, ArgRevision, ArgHash, ArgStableHash}

// standInBuiltins are the built-ins Parse and Check bind with, before any
// revision: look-alikes of real values.
var standInBuiltins = Builtins{
	Workload: "workload", Namespace: "namespace", Service: "service",
	Revision: 1, Hash: "0123456789", StableHash: "9876543210",
}

// Template is one analysis as read from Git: its declared arguments and
// its metrics, with {{args.NAME}} placeholders still in them. Bind makes
// it measurable.
type Template struct {
	// Name is the analysis' name: its ConfigMap's.
	Name    string
	Args    []Arg
	Metrics []Metric
}

// Arg is an argument a Template declares.
type Arg struct {
	Name string
	// Value is the default; Required is true when the document gives none,
	// and every Deployment that names the analysis must then give one.
	Value    string
	Required bool
}

// Metric is one metric of an analysis: its timing and limits, its
// conditions on the measured result, and exactly one provider of
// Prometheus, Web and Job.
type Metric struct {
	// Name is the metric's name in its document.
	Name string
	// Spec is the metric's timing and limits, defaults applied; Spec.Name
	// is "<analysis>/<metric>".
	Spec strategies.MetricSpec
	// SuccessCondition and FailureCondition are expr expressions over
	// result; at least one is given, but for a Job, which has none.
	SuccessCondition, FailureCondition string
	// Timeout bounds one measurement.
	Timeout time.Duration

	Prometheus *Prometheus
	Web        *Web
	// Job is the spec of the Job each measurement creates.
	Job *batchv1.JobSpec
}

// Prometheus is an instant PromQL query.
type Prometheus struct {
	Query string
}

// Web is an HTTP request whose answer is the result.
type Web struct {
	// URL is an absolute http or https URL.
	URL string
	// Method is GET or POST; Body is sent with a POST only.
	Method, Body string
	Headers      []Header
	// JSONPath picks the result from a JSON answer, in client-go's syntax
	// ("{.status.ratio}"); empty: the whole answer.
	JSONPath string
}

// Header is one header of a web request: a Value, or the value of a key of
// a Secret in the workload's namespace, read at each measurement.
type Header struct {
	Name   string
	Value  string
	Secret *SecretKeyRef
}

// SecretKeyRef names a key of a Secret.
type SecretKeyRef struct {
	Name, Key string
}

// Builtins are the values of the built-in arguments for one revision.
type Builtins struct {
	// Workload is the workload's name; Namespace its namespace.
	Workload, Namespace string
	// Service is the Service the strategy steers (empty for rolling).
	Service string
	// Revision is the revision's plimsoll.dev/revision.
	Revision int64
	// Hash is the plimsoll.dev/template-hash of the revision under
	// analysis; StableHash that of the revision it would replace (empty
	// when there is none).
	Hash, StableHash string
}

// Bound is a metric ready to measure: its arguments substituted and its
// conditions compiled.
type Bound struct {
	Metric
	// Analysis is the name of the analysis the metric belongs to.
	Analysis string
	// Hash is the template hash of the revision it judges.
	Hash string

	success, failure *condition
}

// Specs are the timing and limits of bs, for the tally in strategies.
func Specs(bs []Bound) []strategies.MetricSpec {
	specs := make([]strategies.MetricSpec, 0, len(bs))
	for _, b := range bs {
		specs = append(specs, b.Spec)
	}
	return specs
}
