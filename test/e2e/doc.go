// Package e2e holds the end-to-end tests of plimsoll. They run against the
// local control plane of hack/cluster (a real API server, controller
// manager and scheduler, with kwok simulating the nodes) and are built only
// with the e2e build tag:
//
//	make test-e2e
//	go test -tags e2e ./test/e2e/...
//
// The suite uses the cluster that runs at .cluster/ and starts one when none
// does; a cluster it started is stopped again when the suite ends, unless
// PLIMSOLL_KEEP_CLUSTER=1.
package e2e
