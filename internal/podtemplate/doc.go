// Package podtemplate tells pod templates apart as the API server and the
// Deployment controller do: Hash is a template's revision identity, the
// same however its YAML was written and whatever defaults the API server
// fills in (Normalize mirrors the API server's defaulting of a pod
// template), Stamp and LiveHash carry it on the templates the rollout
// controller writes, and Holds tells a live template changed by hand.
//
// The rollout planners (package strategies), the rollout controller and
// the sync's reference checks use it; it decides nothing about rollouts.
package podtemplate
