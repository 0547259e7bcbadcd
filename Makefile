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
E2E_TIMEOUT ?= 30m

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

# The suite starts the local control plane when none runs (building its tools
# on the first run, hence the long timeout) and stops it again at the end; a
# cluster that was already up (make cluster-up, make demo) is reused and kept.
.PHONY: test-e2e
test-e2e: ## e2e tests against the local control plane (started if needed)
	$(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/... ./test/chart/...

# The benchmark needs the control plane: it is brought up (and left up).
.PHONY: bench
bench: build cluster-up ## time a cold sync and a no-op resync of 2,000 objects against kubectl; writes bench/results.md
	$(GO) test -tags bench -count=1 -timeout 60m -v -run TestSyncBenchmark ./test/bench/

.PHONY: cluster-up
cluster-up: ## start the local control plane (idempotent; builds its tools once)
	$(CLUSTER) up

.PHONY: cluster-down
cluster-down: ## stop the local control plane
	$(CLUSTER) down

.PHONY: lint
lint: $(BIN)/staticcheck ## gofmt, go vet and staticcheck
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags e2e,bench ./...
	$(BIN)/staticcheck -tags e2e,bench ./...
	for m in . hack/tools/k8s hack/tools/kwok hack/tools/lint hack/tools/helm; do \
		(cd $$m && $(GO) mod tidy -diff && $(GO) mod verify >/dev/null) || { echo "module $$m is not tidy or fails verification"; exit 1; }; \
	done

$(BIN)/staticcheck: hack/tools/lint/go.mod hack/tools/lint/go.sum
	cd hack/tools/lint && $(GO) build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

.PHONY: tidy
tidy: ## go mod tidy in every module
	$(GO) mod tidy
	for m in hack/tools/k8s hack/tools/kwok hack/tools/lint hack/tools/helm; do (cd $$m && $(GO) mod tidy); done

.PHONY: clean
clean: ## remove build outputs (not the cached control-plane tools)
	rm -rf $(BIN)
