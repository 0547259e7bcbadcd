// Package rollout is the embedded rollout controller.
//
// It watches the Deployments that sync hands it, reconciles each workload
// through the strategy its annotations name (rolling, blue-green or canary),
// writes status as annotations on the workload's Deployments, and acts on
// the commands users set (promote, abort, retry, pause, resume). The
// arithmetic of each strategy lives in package strategies; this package
// executes the plans against the API server.
package rollout
