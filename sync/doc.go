// Package sync turns a Git commit into objects in the cluster, safely.
//
// It owns the Git source, manifest rendering and validation, server-side
// apply, the inventory and prune, sync windows and the sync status: the
// path of one commit. The long-running process around the syncs (many
// syncs in one process, their spread over replicas, the push webhook)
// lives in daemon/, which imports sync. Deployments are not applied here:
// they are handed to the rollout controller through an interface that
// package rollout defines and cmd/plimsoll wires, so sync never imports
// rollout.
package sync
