// Package contract is the plimsoll.dev/ contract in one place: every label
// and annotation key plimsoll reads or writes, the values they take
// (strategies, commands, roles, colors, phases, sync states), the
// suffixes of the Deployments a workload runs as, and the reason of the
// Event the CLI reads back after a command. Users set some of them in
// Git, read others with kubectl, and every package of plimsoll uses these
// names rather than string literals. docs/reference.md gives each its
// meaning and default, and a test of cmd/plimsoll fails when one has no
// line there.
//
// The package holds constants only; it imports nothing, so the pure
// planners in strategies may use it too.
package contract

// Prefix starts every label and annotation key plimsoll owns. Pod
// template annotations with this prefix never count in a template's hash,
// and Service selector keys with it are the rollout controller's.
const Prefix = "plimsoll.dev/"

// Input annotations: set by users on a Deployment in Git.
const (
	// AnnotationStrategy names the strategy of a workload: StrategyRolling
	// (the default), StrategyBlueGreen or StrategyCanary.
	AnnotationStrategy = "plimsoll.dev/strategy"
	// AnnotationAutoRollback, "false", keeps a failed revision in place
	// instead of restoring the previous template. Default "true".
	AnnotationAutoRollback = "plimsoll.dev/auto-rollback"
	// AnnotationActiveService names the Service a blue-green workload
	// steers to its active color (required for blue-green).
	AnnotationActiveService = "plimsoll.dev/active-service"
	// AnnotationPreviewService names the Service a blue-green workload
	// steers to the color its newest revision runs on (optional).
	AnnotationPreviewService = "plimsoll.dev/preview-service"
	// AnnotationAutoPromote, "false", holds a ready blue-green revision
	// until a promote command. Default "true".
	AnnotationAutoPromote = "plimsoll.dev/auto-promote"
	// AnnotationScaleDownDelay is how long the old blue-green color stays
	// up after the swap, a Go duration. Default 30s.
	AnnotationScaleDownDelay = "plimsoll.dev/scale-down-delay"
	// AnnotationService names the Service a canary workload steers with
	// the serving label (required for canary).
	AnnotationService = "plimsoll.dev/service"
	// AnnotationSteps holds the canary steps, e.g. "25%, pause 30s, 100%".
	AnnotationSteps = "plimsoll.dev/steps"
	// AnnotationAnalysis names the analyses that judge a workload's
	// revisions: ConfigMaps labelled LabelAnalysis in its namespace,
	// comma-separated ("error-rate, latency").
	AnnotationAnalysis = "plimsoll.dev/analysis"
	// AnnotationAnalysisArgs gives the analyses' arguments,
	// comma-separated name=value pairs ("threshold=0.01, path=/healthz").
	AnnotationAnalysisArgs = "plimsoll.dev/analysis-args"
	// AnnotationProgressDeadline is how long a revision of a StatefulSet
	// or a DaemonSet may take to have every pod updated and Ready before
	// it fails and is rolled back: a Go duration, "10m" by default (what
	// a Deployment's progressDeadlineSeconds defaults to).
	AnnotationProgressDeadline = "plimsoll.dev/progress-deadline"
	// AnnotationForce, "true" on an object in Git, lets the sync delete and
	// recreate it when a change touches an immutable field.
	AnnotationForce = "plimsoll.dev/force"
	// AnnotationPrune, PruneDisabled on a live object, keeps it when it
	// leaves Git.
	AnnotationPrune = "plimsoll.dev/prune"
	// PruneDisabled is the AnnotationPrune value that keeps an object.
	PruneDisabled = "disabled"
	// AnnotationKubectlEdits, KubectlEditsKept on an object in Git or in
	// the cluster, keeps the fields that kubectl added to it: the sync
	// then restores only the fields Git sets. On a Deployment it keeps a
	// pod template changed by hand until Git's template changes.
	AnnotationKubectlEdits = "plimsoll.dev/kubectl-edits"
	// KubectlEditsKept is the AnnotationKubectlEdits value that keeps them.
	KubectlEditsKept = "keep"
)

// RolloutInputs are the input annotations that steer a workload's
// rollout. They are Git's alone: one that Git no longer sets leaves every
// Deployment of the workload too, where the others (prune, kubectl-edits)
// may also be set on a live object.
var RolloutInputs = []string{
	AnnotationStrategy, AnnotationAutoRollback, AnnotationActiveService, AnnotationPreviewService,
	AnnotationAutoPromote, AnnotationScaleDownDelay, AnnotationService, AnnotationSteps,
	AnnotationAnalysis, AnnotationAnalysisArgs,
}

// Status annotations: written by plimsoll on every Deployment of a
// workload.
const (
	// AnnotationPhase holds the workload's phase: PhaseProgressing,
	// PhasePaused, PhaseHealthy or PhaseDegraded.
	AnnotationPhase = "plimsoll.dev/phase"
	// AnnotationRevision holds the revision number: 1 for the first
	// template, +1 each time the Git pod template hash changes.
	AnnotationRevision = "plimsoll.dev/revision"
	// AnnotationTemplateHash holds, on a Deployment, the hash of the desired
	// pod template as written in Git; on a pod template the controller
	// wrote, the hash of that template itself.
	AnnotationTemplateHash = "plimsoll.dev/template-hash"
	// AnnotationCommit holds the Git commit the desired state came from. On
	// the sync's ConfigMap: the last commit applied in full.
	AnnotationCommit = "plimsoll.dev/commit"
	// AnnotationMessage holds one human line about the rollout (on a
	// Deployment) or the last sync (on the sync's ConfigMap).
	AnnotationMessage = "plimsoll.dev/message"
	// AnnotationFailedHash holds the template hash that failed; a revision
	// with that hash is not started until Git changes it or a retry.
	AnnotationFailedHash = "plimsoll.dev/failed-hash"
	// AnnotationStableHash holds, on a rolling workload's Deployment, the
	// template hash of its last revision that was Healthy: the template an
	// automatic rollback restores.
	AnnotationStableHash = "plimsoll.dev/stable-hash"
	// AnnotationRole is what a Deployment is to its workload: RolePrimary,
	// RoleActive, RolePreview, RoleIdle, RoleStable or RoleCanary.
	AnnotationRole = "plimsoll.dev/role"
	// AnnotationCommand carries a command (CommandPromote, ...) on the
	// workload's primary Deployment; the controller clears it once acted
	// on.
	AnnotationCommand = "plimsoll.dev/command"
)

// The lists of the keys above and below that are written together, each
// the one answer to what a write of it sets or removes.
var (
	// StatusKeys are the annotations a workload's status is recorded in:
	// a write of the status sets or removes each of them.
	StatusKeys = []string{AnnotationPhase, AnnotationRevision, AnnotationTemplateHash,
		AnnotationFailedHash, AnnotationStableHash, AnnotationCommit, AnnotationMessage}
	// StateKeys are the annotations a blue-green or canary workload's
	// state is recorded in, beside its status and its analysis run.
	StateKeys = []string{AnnotationReplicas, AnnotationStep, AnnotationStepSince, AnnotationScaleDownAt, AnnotationPaused}
)

// The rollout controller's own state on the Deployments of a blue-green or
// canary workload, next to the status: what a restarted controller resumes
// from.
const (
	// AnnotationReplicas is the workload's size in Git; the Deployments'
	// own counts move during a rollout.
	AnnotationReplicas = "plimsoll.dev/replicas"
	// AnnotationStep is the canary step the rollout is at, from 1.
	AnnotationStep = "plimsoll.dev/step"
	// AnnotationStepSince is when the rollout entered that step (RFC 3339).
	AnnotationStepSince = "plimsoll.dev/step-since"
	// AnnotationScaleDownAt is when the blue-green color that lost traffic
	// scales to zero (RFC 3339).
	AnnotationScaleDownAt = "plimsoll.dev/scale-down-at"
	// AnnotationPaused is "true" after a pause command.
	AnnotationPaused = "plimsoll.dev/paused"
	// AnnotationAnalysisRun is the analysis run of the current stage of
	// the rollout, with its counts and last measurements (JSON).
	AnnotationAnalysisRun = "plimsoll.dev/analysis-run"
	// AnnotationServed is "true" on a canary pod the controller labelled
	// serving. A pod that has it without the serving label was taken out of
	// traffic by hand: the controller leaves it out and labels another.
	AnnotationServed = "plimsoll.dev/served"
	// AnnotationHeldOut is "<key>=<value>" on a ReplicaSet of a canary's
	// stable Deployment that a hand-over took out of the stable's selector
	// for its length, by taking away that one label; the label comes back
	// once the stable runs the canary's ReplicaSet, and the stable takes
	// the ReplicaSet back as history (`kubectl rollout undo`).
	AnnotationHeldOut = "plimsoll.dev/held-out"
)

// Labels.
const (
	// LabelWorkload names the workload a Deployment and its pod template
	// belong to.
	LabelWorkload = "plimsoll.dev/workload"
	// LabelSync names the sync that applied an object; the sync lists its
	// objects by it, and the rollout controller follows only the workloads
	// of its own sync.
	LabelSync = "plimsoll.dev/sync"
	// LabelColor is ColorBlue or ColorGreen on the two Deployments of a
	// blue-green workload, their pod templates, and the Services' selectors.
	LabelColor = "plimsoll.dev/color"
	// LabelServing is "true" on the pods of a canary workload that receive
	// traffic, and in the canary Service's selector.
	LabelServing = "plimsoll.dev/serving"
	// LabelTrack is TrackCanary or TrackCanaryNext on the canary
	// Deployment of a canary workload, in its selector and template, so
	// that it never selects the stable Deployment's pods.
	LabelTrack = "plimsoll.dev/track"
	// LabelAnalysis marks a ConfigMap that holds an analysis (in its data
	// key AnalysisKey); its value is not read.
	LabelAnalysis = "plimsoll.dev/analysis"
	// AnalysisKey is the data key of an analysis ConfigMap.
	AnalysisKey = "analysis.yaml"
	// TrackCanary and TrackCanaryNext are the values of LabelTrack. A
	// canary's pods handed over to the stable Deployment keep theirs, and
	// the next canary Deployment gets the other, so that its selector never
	// selects the stable's pods.
	TrackCanary     = "canary"
	TrackCanaryNext = "canary-b"
)

// Declared syncs: ConfigMaps in the namespace a daemon takes declarations
// from (run --syncs-namespace), each declaring one sync named after it
// (docs/syncs.md).
const (
	// LabelSyncDeclaration marks a ConfigMap that declares a sync (in its
	// data key SyncDeclarationKey); its value is not read.
	LabelSyncDeclaration = "plimsoll.dev/sync-declaration"
	// SyncDeclarationKey is the data key of a declaration ConfigMap.
	SyncDeclarationKey = "sync.yaml"
	// FinalizerRetire holds a declaration ConfigMap that is being deleted
	// until the replica that owns its sync has retired it: pruned what it
	// applied (when its prune is on) and removed its record.
	FinalizerRetire = "plimsoll.dev/retire"
	// LabelReplica marks the Lease each replica of a daemon that serves
	// many syncs renews while it runs; its value is not read.
	LabelReplica = "plimsoll.dev/replica"
)

// The sync's record: ConfigMap NamePrefix+<sync name> in the status
// namespace.
const (
	// NamePrefix starts the name of every sync's ConfigMap.
	NamePrefix = "plimsoll-sync-"
	// AnnotationSyncStatus holds SyncSynced, SyncFailed or SyncHeld.
	AnnotationSyncStatus = "plimsoll.dev/sync-status"
	// AnnotationFetchedCommit is the last commit fetched from the remote.
	AnnotationFetchedCommit = "plimsoll.dev/fetched-commit"
	// AnnotationStaleSince is set while the source cannot be read: the time
	// (RFC 3339) of the first failure.
	AnnotationStaleSince = "plimsoll.dev/stale-since"
	// AnnotationRequestedAt asks for a sync out of turn: whoever changes
	// its value makes the syncing replica sync at once.
	AnnotationRequestedAt = "plimsoll.dev/requested-at"
	// AnnotationBlockedWriter is set by a daemon that finds the sync held
	// by another (the Lease LeasePrefix+<sync name>) and so writes
	// nothing: "<its identity> since <time>: the sync is held by <holder>".
	// It removes the annotation when it takes over or stops.
	AnnotationBlockedWriter = "plimsoll.dev/blocked-writer"
	// AnnotationAcceptRewind, set by a person on the sync's ConfigMap,
	// accepts the commit a sync holds as a rewind (a branch head that does
	// not descend from the last commit applied, held under
	// --hold-rewinds): its value is that commit's full hash or a prefix of
	// at least 7 hex digits, and lets that commit, and no other, be
	// applied. The sync removes the annotation once it has applied a
	// commit, so an acceptance serves once.
	AnnotationAcceptRewind = "plimsoll.dev/accept-rewind"
	// LeasePrefix starts the name of the Lease a daemon holds while it
	// writes for a sync: one writer per sync.
	LeasePrefix = "plimsoll-"

	// The values of AnnotationSyncStatus.
	SyncSynced = "Synced"
	SyncFailed = "Failed"
	SyncHeld   = "Held"
)

// Strategies, the values of AnnotationStrategy.
const (
	StrategyRolling   = "rolling"
	StrategyBlueGreen = "blue-green"
	StrategyCanary    = "canary"
)

// Commands, the values of AnnotationCommand.
const (
	CommandPromote = "promote"
	CommandAbort   = "abort"
	CommandRetry   = "retry"
	CommandPause   = "pause"
	CommandResume  = "resume"
)

// Event reasons the CLI reads.
const (
	// ReasonCommand is the reason of the Event the rollout controller
	// records on a workload's primary Deployment once it has acted on a
	// command; the Event's message starts with the command, e.g.
	// "promote: ...".
	ReasonCommand = "Command"
)

// Phases, the values of AnnotationPhase.
const (
	PhaseProgressing = "Progressing"
	PhasePaused      = "Paused"
	PhaseHealthy     = "Healthy"
	PhaseDegraded    = "Degraded"
)

// Roles, the values of AnnotationRole.
const (
	// RolePrimary is the one Deployment of a rolling workload.
	RolePrimary = "primary"
	// RoleActive is the blue-green color the active Service selects.
	RoleActive = "active"
	// RolePreview is the blue-green color a new revision goes to.
	RolePreview = "preview"
	// RoleIdle is the blue-green color that neither serves nor takes a
	// revision.
	RoleIdle = "idle"
	// RoleStable is the canary workload's Deployment <name>.
	RoleStable = "stable"
	// RoleCanary is the canary workload's Deployment <name>-canary.
	RoleCanary = "canary"
)

// Colors, the values of LabelColor.
const (
	ColorBlue  = "blue"
	ColorGreen = "green"
)

// Suffixes of the Deployments a workload <name> runs as besides <name>:
// <name>-blue and <name>-green (blue-green), <name>-canary (canary).
const (
	SuffixBlue   = "-" + ColorBlue
	SuffixGreen  = "-" + ColorGreen
	SuffixCanary = "-canary"
)

// plimsoll's own kinds, read from Git beside Kubernetes' (docs/helm-charts.md).
const (
	// APIVersion is the apiVersion of plimsoll's own kinds.
	APIVersion = "plimsoll.dev/v1"
	// KindHelmChart is the kind of a Helm chart release: a chart from Git
	// or a repository, with its values, rendered as part of the sync.
	KindHelmChart = "HelmChart"
)

// SetTemplateKey is the key of a StatefulSet's or a DaemonSet's template
// hash among a sync record's templates (beside its Deployments', keyed
// namespace/name): "StatefulSet/namespace/name".
func SetTemplateKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// RecreateAdvice is what the error of a commit that changes an immutable
// field of a workload's Deployment (its selector) says to do instead: the
// sync's dry-run and the rollout controller's check say it alike.
const RecreateAdvice = "a workload's Deployment is not deleted and created again, with " + AnnotationForce + " or without: " +
	"that would take its pods down; add the changed Deployment under another name, and remove this one in a later commit once the new one serves"
