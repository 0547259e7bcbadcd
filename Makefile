# plimsoll — build, test and demo entry points. `make help` lists them.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
BIN      := $(CURDIR)/bin
CLUSTER  := $(CURDIR)/hack/cluster
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
E2E_TIMEOUT ?= 40m

export KUBECONFIG := $(CURDIR)/.cluster/kubeconfig
export PATH := $(CURDIR)/.cluster/bin:$(PATH)

.PHONY: help
help: ## list the targets
	@awk -F':.*## ' '/^[a-z0-9-]+:.*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/plimsoll with the version and commit stamped
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/plimsoll ./cmd/plimsoll

DEMO_NS ?= plimsoll-demo

.PHONY: demo
demo: build ## the local control plane, a Git repository of examples/, the daemon, and a rollout to watch
	DEMO_NS=$(DEMO_NS) hack/demo

IMAGE ?= plimsoll:$(VERSION)

.PHONY: image
image: ## build the container image (needs a Docker engine)
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

.PHONY: test
test: test-unit test-e2e ## run the unit tests, then the e2e suite against the local control plane

.PHONY: test-unit
test-unit: ## unit tests
	$(GO) test -count=1 ./...

# Each fuzz target runs FUZZTIME (go test runs one -fuzz target at a time):
# the manifest renderer, the canary steps grammar, the plimsoll.dev/
# annotations of a workload, the sync record's inventory, the webhook's
# signature check, the streaming Git delta applier (against go-git's) and
# the analysis documents.
# The budget is a count of executions, not a duration: a duration is a
# wall-clock deadline that Go's fuzz coordinator can race on a
# loaded machine, failing a target with "context deadline exceeded" and no
# crasher. 30000 executions are 5-15 s per target on 2 cores.
FUZZ_TARGETS := ./sync/manifest:FuzzRender ./strategies:FuzzParseSteps ./rollout:FuzzWorkloadAnnotations \
	./sync/inventory:FuzzParseInventory ./sync/webhook:FuzzAuthentic ./sync/source:FuzzApplyDelta \
	./analysis:FuzzParse
FUZZTIME ?= 30000x

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME (default 30000x, a count of executions)
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name ($$pkg), -fuzztime $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

# The suite starts the local control plane when none runs (building its tools
# on the first run, hence the long timeout) and stops it again at the end; a
# cluster that was already up (make cluster-up, make demo) is reused and kept.
.PHONY: test-e2e
test-e2e: ## e2e tests against the local control plane (started if needed)
	$(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/... ./test/chart/...

.PHONY: bench
bench: bench-sync bench-repo bench-rollout ## the benchmarks below; each writes its section of bench/results.md

# The sync benchmark needs the control plane: it is brought up (and left up).
.PHONY: bench-sync
bench-sync: build cluster-up ## time a cold sync and a no-op resync of 2,000 objects against kubectl
	$(GO) test -tags bench -count=1 -timeout 60m -v -run TestSyncBenchmark ./test/bench/

# The repository memory benchmark needs the control plane too. BENCH_BEFORE
# names another plimsoll binary to measure beside bin/plimsoll.
BENCH_BEFORE ?=

.PHONY: bench-repo
bench-repo: build cluster-up ## peak RSS of a cold sync of a repository with a 200 MB blob, and of one with 100,000 files
	PLIMSOLL_BENCH_BEFORE=$(BENCH_BEFORE) $(GO) test -tags bench -count=1 -timeout 60m -v -run TestRepositoryMemoryBenchmark ./test/bench/

# The rollout benchmark runs on a control plane of its own, with enough
# simulated nodes for 300 + 300 workloads of 4 pods and their surge (kwok
# gives each node's pods IPs from its /24, so about 250 pods a node), so
# that it neither disturbs nor is disturbed by the e2e suite or the demo.
# It is started from an empty etcd and stopped at the end. BENCH_BIN is the
# binary measured (default: bin/plimsoll, built first), BENCH_LABEL names
# its rows, BENCH_SIZES lists N:runs (N workloads per strategy).
BENCH_BIN           ?= $(BIN)/plimsoll
BENCH_LABEL         ?= current
BENCH_SIZES         ?= 100:1,300:1
BENCH_TIMEOUT       ?= 4h
BENCH_CLUSTER_DIR   := $(CURDIR)/.cluster-bench
BENCH_CLUSTER_ENV   := PLIMSOLL_CLUSTER_DIR=$(BENCH_CLUSTER_DIR) PLIMSOLL_CLUSTER_PORT_BASE=26540 PLIMSOLL_CLUSTER_NODES=24

.PHONY: bench-rollout
bench-rollout: $(if $(filter $(BIN)/plimsoll,$(BENCH_BIN)),build) ## roll N canary and N blue-green workloads to a new image (BENCH_BIN, BENCH_LABEL, BENCH_SIZES)
	$(BENCH_CLUSTER_ENV) $(CLUSTER) down
	$(BENCH_CLUSTER_ENV) $(CLUSTER) up
	status=0; \
	PLIMSOLL_BENCH_BIN=$(BENCH_BIN) PLIMSOLL_BENCH_LABEL=$(BENCH_LABEL) PLIMSOLL_BENCH_SIZES=$(BENCH_SIZES) \
	PLIMSOLL_BENCH_KUBECONFIG=$(BENCH_CLUSTER_DIR)/kubeconfig \
		$(GO) test -tags bench -count=1 -timeout $(BENCH_TIMEOUT) -v -run TestRolloutBenchmark ./test/bench/ || status=$$?; \
	$(BENCH_CLUSTER_ENV) $(CLUSTER) down; \
	exit $$status

.PHONY: cluster-up
cluster-up: ## start the local control plane (idempotent; builds its tools once)
	$(CLUSTER) up

.PHONY: cluster-down
cluster-down: ## stop the local control plane
	$(CLUSTER) down

# The tool modules, each pinning tools that hack/cluster builds.
TOOL_MODULES := hack/tools/k8s hack/tools/kwok hack/tools/lint hack/tools/helm hack/tools/prometheus \
	hack/tools/prometheus-adapter hack/tools/argo-rollouts hack/tools/flux

.PHONY: lint
lint: $(BIN)/staticcheck ## gofmt, go vet and staticcheck
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags e2e,bench ./...
	$(BIN)/staticcheck -tags e2e,bench ./...
	for m in . $(TOOL_MODULES); do \
		(cd $$m && $(GO) mod tidy -diff && $(GO) mod verify >/dev/null) || { echo "module $$m is not tidy or fails verification"; exit 1; }; \
	done

$(BIN)/staticcheck: hack/tools/lint/go.mod hack/tools/lint/go.sum
	cd hack/tools/lint && $(GO) build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

.PHONY: tidy
tidy: ## go mod tidy in every module
	$(GO) mod tidy
	for m in $(TOOL_MODULES); do (cd $$m && $(GO) mod tidy); done

.PHONY: clean
clean: ## remove build outputs (not the cached control-plane tools)
	rm -rf $(BIN)
