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
# E2E_PARALLEL is how many of the e2e tests marked parallel run at once:
# they mostly wait (pods, pauses, polls), so more than the 2 cores.
E2E_PARALLEL ?= 4

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

# The image (hack/image, docs/image.md) is named
# $(IMAGE_REPOSITORY):$(IMAGE_TAG), by default ghcr.io/plimsoll/plimsoll
# and $(VERSION); IMAGE names it whole. Set on the command line, they reach
# hack/image through the environment.
IMAGE_ENV := VERSION=$(VERSION) COMMIT=$(COMMIT)

.PHONY: image
image: ## build the container image: with a Docker engine if one answers, else with buildah (installed if missing)
	$(IMAGE_ENV) hack/image build

# The image test builds with buildah whatever engine there is, as root: it
# runs the image's binary as 65532 on a read-only root, and reads the SBOM
# and the values beside the image. PLIMSOLL_IMAGE_* are what it must say.
.PHONY: test-image
test-image: ## build the image with buildah and test it: version, nonroot, read-only root, SBOM
	$(IMAGE_ENV) PLIMSOLL_IMAGE_VERSION=$(VERSION) PLIMSOLL_IMAGE_COMMIT=$(COMMIT) hack/image test

.PHONY: image-push
image-push: ## push the buildah-built image to its registry (IMAGE_REPOSITORY, IMAGE_TAG)
	$(IMAGE_ENV) hack/image push

.PHONY: test
test: test-unit test-e2e ## run the unit tests, then the e2e suite against the local control plane

.PHONY: test-unit
test-unit: ## unit tests
	$(GO) test -count=1 ./...

# Each fuzz target runs FUZZTIME (go test runs one -fuzz target at a time):
# the manifest renderer, the canary steps grammar, the plimsoll.dev/
# annotations of a workload, the sync record's inventory, the webhook's
# signature check, the streaming Git delta applier (against go-git's), the
# analysis documents, the Helm release document and the SOPS files a
# render decrypts.
# The budget is a count of executions, not a duration: a duration is a
# wall-clock deadline that Go's fuzz coordinator can race on a
# loaded machine, failing a target with "context deadline exceeded" and no
# crasher. 30000 executions are 5-15 s per target on 2 cores.
FUZZ_TARGETS := ./sync/manifest:FuzzRender ./strategies:FuzzParseSteps ./rollout:FuzzWorkloadAnnotations \
	./sync/inventory:FuzzParseInventory ./daemon/webhook:FuzzAuthentic ./sync/source:FuzzApplyDelta \
	./analysis:FuzzParse ./sync/helm:FuzzParseRelease ./sync/decrypt:FuzzReadFile ./sync/artifact:FuzzUnpack
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
test-e2e: browser ## e2e tests against the local control plane (started if needed)
	$(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) -v ./test/e2e/... ./test/chart/...

# The web view's e2e tests drive headless Chromium: Debian's package,
# installed by hack/browser (as root). In CI a browser that cannot be
# installed fails the run; elsewhere those tests skip and say why.
.PHONY: browser
browser: ## install the headless browser of the web view's e2e tests (Debian's chromium)
	hack/browser install >/dev/null

# The screenshots in docs/ui.md: TestUI saves them there.
.PHONY: ui-screenshots
ui-screenshots: browser ## take the web view's screenshots again, into docs/
	PLIMSOLL_UI_SCREENSHOTS=docs $(GO) test -tags e2e -count=1 -timeout 10m -v -run '^TestUI$$' ./test/e2e/

.PHONY: bench
bench: bench-peers bench-repo bench-index bench-many ## the comparison with Argo Rollouts, Flux and kubectl, the repository and index memory benchmarks, then many syncs

# The benchmarks below but bench-sync run on a control plane of their own
# (BENCH_CLUSTER_DIR, ports from 26540), so that they neither disturb nor
# are disturbed by the e2e suite or the demo: each target starts it from
# an empty etcd and stops it at the end, whatever the outcome. It has
# BENCH_NODES simulated nodes: kwok gives each node's pods IPs from its
# /24, so about 250 pods a node, and the scale comparison's 1,000
# workloads of 10 pods peak at 13,000 pods while they roll (a surge of 3
# each), 52 nodes; 64 leave room.
BENCH_NODES         ?= 64
BENCH_CLUSTER_DIR   := $(CURDIR)/.cluster-bench
BENCH_CLUSTER_ENV   := PLIMSOLL_CLUSTER_DIR=$(BENCH_CLUSTER_DIR) PLIMSOLL_CLUSTER_PORT_BASE=26540 PLIMSOLL_CLUSTER_NODES=$(BENCH_NODES)
BENCH_KUBECONFIG    := PLIMSOLL_BENCH_KUBECONFIG=$(BENCH_CLUSTER_DIR)/kubeconfig

# bench_session runs the command $(1) on the benchmark's control plane.
define bench_session
	$(BENCH_CLUSTER_ENV) $(CLUSTER) down
	$(BENCH_CLUSTER_ENV) $(CLUSTER) up
	status=0; $(1) || status=$$?; $(BENCH_CLUSTER_ENV) $(CLUSTER) down; exit $$status
endef

# The comparison: plimsoll against Argo Rollouts (rollouts), Flux's
# source-controller and kustomize-controller (sync and scale), Flux's
# source-controller and helm-controller (helm: a chart in Git rendering
# BENCH_HELM_N objects) and kubectl (sync), each tool's runs interleaved
# with plimsoll's. The peers are built
# from their Go modules (hack/tools/argo-rollouts, hack/tools/flux) into the
# tools cache once, like the control plane. The full run takes hours on 2
# cores; the sizes and runs below make it shorter, and BENCH_NOTE says so
# above the results. BENCH_RESUME=1 carries on a run that was stopped: the
# runs recorded with the same versions of the tools (for plimsoll, the
# same commit; BENCH_BIN names a binary kept from it) are not measured
# again. BENCH_TOOLS limits a resumed run to some tools (e.g. flux), to
# take the peers' runs while plimsoll's wait.
BENCH_RUNS          ?= 3
BENCH_PARTS         ?= rollout,sync,scale,helm
BENCH_ROLLOUT_N     ?= 100,300
BENCH_SYNC_N        ?= 1000,5000
BENCH_SCALE_N       ?= 1000
BENCH_HELM_N        ?= 1000
BENCH_NOTE          ?=
BENCH_RESUME        ?=
BENCH_TOOLS         ?=
BENCH_PEERS_TIMEOUT ?= 48h

# The note and the tool list are free text: exported, not quoted on the
# command line, so that an apostrophe in the note cannot break the recipe.
bench-peers: export PLIMSOLL_BENCH_NOTE = $(BENCH_NOTE)
bench-peers: export PLIMSOLL_BENCH_TOOLS = $(BENCH_TOOLS)

.PHONY: bench-peers
bench-peers: build ## compare with the peers (BENCH_PARTS, BENCH_RUNS, BENCH_ROLLOUT_N, BENCH_SYNC_N, BENCH_SCALE_N, BENCH_HELM_N, BENCH_NODES, BENCH_NOTE, BENCH_RESUME, BENCH_TOOLS, BENCH_BIN)
	$(if $(findstring rollout,$(BENCH_PARTS)),$(CLUSTER) argo-rollouts >/dev/null)
	$(CLUSTER) flux >/dev/null
	$(call bench_session,$(BENCH_KUBECONFIG) PLIMSOLL_BENCH_PARTS=$(BENCH_PARTS) PLIMSOLL_BENCH_RUNS=$(BENCH_RUNS) \
		PLIMSOLL_BENCH_ROLLOUT_N=$(BENCH_ROLLOUT_N) PLIMSOLL_BENCH_SYNC_N=$(BENCH_SYNC_N) PLIMSOLL_BENCH_SCALE_N=$(BENCH_SCALE_N) \
		PLIMSOLL_BENCH_HELM_N=$(BENCH_HELM_N) \
		PLIMSOLL_BENCH_RESUME=$(BENCH_RESUME) PLIMSOLL_BENCH_BIN=$(BENCH_BIN) \
		$(GO) test -tags bench -count=1 -timeout $(BENCH_PEERS_TIMEOUT) -v -run '^TestPeerBenchmark$$' ./test/bench/)

# The sync benchmark of plimsoll alone needs the local control plane: it is
# brought up (and left up).
.PHONY: bench-sync
bench-sync: build cluster-up ## time a cold sync and a no-op resync of 2,000 objects against kubectl
	$(GO) test -tags bench -count=1 -timeout 60m -v -run TestSyncBenchmark ./test/bench/

# BENCH_BEFORE names another plimsoll binary to measure beside bin/plimsoll.
BENCH_BEFORE ?=

.PHONY: bench-repo
bench-repo: build ## peak RSS of a cold sync of a repository with a 200 MB blob, and of one with 100,000 files
	$(call bench_session,$(BENCH_KUBECONFIG) PLIMSOLL_BENCH_BEFORE=$(BENCH_BEFORE) \
		$(GO) test -tags bench -count=1 -timeout 60m -v -run TestRepositoryMemoryBenchmark ./test/bench/)

.PHONY: bench-index
bench-index: build ## peak RSS of a cold sync of a HelmChart whose repository's index.yaml is at its 64 MiB limit (BENCH_BEFORE)
	$(call bench_session,$(BENCH_KUBECONFIG) PLIMSOLL_BENCH_BEFORE=$(BENCH_BEFORE) \
		$(GO) test -tags bench -count=1 -timeout 60m -v -run TestIndexMemoryBenchmark ./test/bench/)

# Many syncs in one install: BENCH_MANY_N syncs (5 Deployments of 2 pods
# and 20 ConfigMaps each, a namespace each) served by plimsoll on each
# replica count of BENCH_MANY_REPLICAS, by BENCH_MANY_SINGLES daemons of one
# sync, and by Flux's controllers with a Kustomization per sync; the idle
# window is BENCH_MANY_IDLE. BENCH_TOOLS limits it to some setups
# (plimsoll, singles, flux). The full size rolls 2,000 pods per setup.
BENCH_MANY_N        ?= 200
BENCH_MANY_REPLICAS ?= 1,3
BENCH_MANY_SINGLES  ?= 20
BENCH_MANY_IDLE     ?= 60s
BENCH_MANY_TIMEOUT  ?= 6h

bench-many: export PLIMSOLL_BENCH_NOTE = $(BENCH_NOTE)
bench-many: export PLIMSOLL_BENCH_TOOLS = $(BENCH_TOOLS)

.PHONY: bench-many
bench-many: build ## many syncs on 1 and 3 replicas, against daemons of one sync and Flux (BENCH_MANY_N, BENCH_MANY_REPLICAS, BENCH_MANY_SINGLES, BENCH_MANY_IDLE, BENCH_TOOLS, BENCH_NOTE)
	$(call bench_session,$(BENCH_KUBECONFIG) PLIMSOLL_BENCH_MANY_N=$(BENCH_MANY_N) PLIMSOLL_BENCH_MANY_REPLICAS=$(BENCH_MANY_REPLICAS) \
		PLIMSOLL_BENCH_MANY_SINGLES=$(BENCH_MANY_SINGLES) PLIMSOLL_BENCH_MANY_IDLE=$(BENCH_MANY_IDLE) \
		$(GO) test -tags bench -count=1 -timeout $(BENCH_MANY_TIMEOUT) -v -run '^TestManySyncsBenchmark$$' ./test/bench/)

# The rollout benchmark of plimsoll alone, binary against binary. BENCH_BIN
# is the binary measured (default: bin/plimsoll, built first), BENCH_LABEL
# names its rows, BENCH_SIZES lists N:runs (N workloads per strategy).
BENCH_BIN           ?= $(BIN)/plimsoll
BENCH_LABEL         ?= current
BENCH_SIZES         ?= 100:1,300:1
BENCH_TIMEOUT       ?= 4h

.PHONY: bench-rollout
bench-rollout: $(if $(filter $(BIN)/plimsoll,$(BENCH_BIN)),build) ## roll N canary and N blue-green workloads to a new image (BENCH_BIN, BENCH_LABEL, BENCH_SIZES)
	$(call bench_session,$(BENCH_KUBECONFIG) PLIMSOLL_BENCH_BIN=$(BENCH_BIN) PLIMSOLL_BENCH_LABEL=$(BENCH_LABEL) PLIMSOLL_BENCH_SIZES=$(BENCH_SIZES) \
		$(GO) test -tags bench -count=1 -timeout $(BENCH_TIMEOUT) -v -run TestRolloutBenchmark ./test/bench/)

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
	$(GO) vet -tags e2e,bench,image ./...
	$(BIN)/staticcheck -tags e2e,bench,image ./...
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
