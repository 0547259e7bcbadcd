// Package bench measures plimsoll on the local control plane and writes
// bench/results.md: the sync against `kubectl apply --server-side`
// (TestSyncBenchmark), and the rollout of many canary and blue-green
// workloads by one commit (TestRolloutBenchmark, whose every run is kept in
// bench/rollout-results.json). It is built only with the bench build tag;
// run it with `make bench`, `make bench-sync` or `make bench-rollout`.
package bench
