// Package strategies holds the pure planners of the rollout strategies.
//
// A planner takes the desired state, the observed state and the current time
// as values and returns a plan. Nothing here talks to a client, reads a
// clock or logs: the rollout controller does that and executes the plan.
package strategies
