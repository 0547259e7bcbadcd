// Package bench measures plimsoll on a control plane and writes
// bench/results.md: plimsoll against its peers (TestPeerBenchmark: the
// rollout of N canary and N blue-green workloads against Argo Rollouts,
// the sync of N ConfigMaps against Flux and `kubectl apply
// --server-side`, 1,000 rolling workloads against Flux, a Helm chart in
// Git rendering N objects against Flux's helm-controller; every run kept in
// bench/peers-results.json, plotted in bench/*.svg), the memory of a sync
// of heavy repositories (TestRepositoryMemoryBenchmark), and plimsoll alone:
// the sync against kubectl (TestSyncBenchmark) and the rollout, binary
// against binary (TestRolloutBenchmark, bench/rollout-results.json); and
// many syncs in one install against daemons of one sync and Flux
// (TestManySyncsBenchmark, bench/many-results.json). It is
// built only with the bench build tag; run it with `make bench` or one of
// the bench-* targets.
package bench
