// Package sync turns a Git commit into objects in the cluster, safely.
//
// It owns the Git source, manifest rendering and validation, server-side
// apply, the inventory and prune, sync windows, the webhook trigger and the
// sync status. Deployments are not applied here: they are handed to the
// rollout controller through an interface that package rollout defines and
// cmd/plimsoll wires, so sync never imports rollout.
package sync
