# cairn — every target sets up what it needs on a fresh machine (Go and the
# module proxy are all it assumes).
SHELL := bash
GO ?= go
ROOT := $(CURDIR)
BIN := $(ROOT)/bin
TOOLS := $(ROOT)/.cache/tools
KUBE_BIN := $(ROOT)/.cache/kube/bin
KOPIA_BIN := $(ROOT)/.cache/kopia/bin
WORKFLOWCHECK_VERSION := v0.6.0
GOLANGCI_LINT_VERSION := v2.15.0
CONTROLLER_GEN_VERSION := v0.23.0
CHART := $(ROOT)/deploy/chart
# RELEASE is the version of the next release, in one place: the VERSION file.
# Builds between releases are named by git (a tag, else the commit).
RELEASE := $(shell cat $(ROOT)/VERSION)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
DIST := $(ROOT)/dist
RELEASE_ARCHES := amd64 arm64
# Bench size: make bench N=100000
N ?= 10000
# A CPU profile of the worker while it backs up or restores: make bench PROFILE=worker.pprof
PROFILE ?=
# Data path bench size in MiB: make bench-datapath DATA_MB=512
DATA_MB ?= 2048

export CAIRN_KUBE_BIN_DIR := $(KUBE_BIN)
# MinIO, the S3 server of the s3:// location tests
export CAIRN_MINIO := $(TOOLS)/minio
# fake-gcs-server, the Google Cloud Storage emulator of the gs:// tests
export CAIRN_FAKE_GCS := $(TOOLS)/fake-gcs-server
# Azurite, Microsoft's Azure Storage emulator, for the azblob:// tests
AZURITE_VERSION := 3.37.0
AZURITE := $(TOOLS)/azurite-$(AZURITE_VERSION)/node_modules/.bin/azurite-blob
export CAIRN_AZURITE := $(AZURITE)

.PHONY: all help generate build image release sandbox-bins node-deps tools kopia-cli lint test chaos test-unit test-e2e record-histories demo bench bench-restore bench-extension bench-datapath bench-fs velero-adapter clean

all: build

## help: what each target does
help:
	@awk '/^## [a-z-]+:/ { print substr($$0, 4); next } /^## / { print "  " substr($$0, 4) }' $(firstword $(MAKEFILE_LIST))

## build: the cairn binary in bin/, and cairn-dev beside it: cairn with `cairn dev` (its embedded
## Temporal server and sandbox) linked in, which `cairn dev` runs
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/cairn ./cmd/cairn
	CGO_ENABLED=0 $(GO) build -tags devserver -ldflags "-X main.version=$(VERSION)" -o $(BIN)/cairn-dev ./cmd/cairn

## image: cairn's image (static binary, CA certificates, non-root user) as .cache/image/cairn.tar,
## reproducible per commit; IMAGE=registry/name:tag also pushes it (credentials: the Docker config)
IMAGE ?=
IMAGE_DIR := $(ROOT)/.cache/image
image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(IMAGE_DIR)/cairn ./cmd/cairn
	$(GO) run ./cmd/cairn-image --binary $(IMAGE_DIR)/cairn --ref cairn.local/cairn:$(VERSION) \
	  --out $(IMAGE_DIR)/cairn.tar $(if $(IMAGE),--push $(IMAGE))

## release: cairn RELEASE (the VERSION file) into dist/: static binaries and image archives for linux
## amd64 and arm64, the packaged chart, and their SHA-256 sums; every artifact carries the same version
release: $(TOOLS)/helm
	rm -rf $(DIST) && mkdir -p $(DIST)
	for arch in $(RELEASE_ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-X main.version=$(RELEASE)" \
	    -o $(DIST)/cairn-$(RELEASE)-linux-$$arch ./cmd/cairn || exit 1; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -tags devserver -ldflags "-X main.version=$(RELEASE)" \
	    -o $(DIST)/cairn-dev-$(RELEASE)-linux-$$arch ./cmd/cairn || exit 1; \
	  $(GO) run ./cmd/cairn-image --binary $(DIST)/cairn-$(RELEASE)-linux-$$arch --arch $$arch \
	    --ref cairn.local/cairn:$(RELEASE) --out $(DIST)/cairn-image-$(RELEASE)-linux-$$arch.tar || exit 1; \
	done
	$(TOOLS)/helm package $(CHART) --version $(RELEASE) --app-version $(RELEASE) --destination $(DIST)
	cd $(DIST) && sha256sum * > SHA256SUMS && cat SHA256SUMS

## sandbox-bins: etcd, kube-apiserver, kube-controller-manager, kubelet, kube-scheduler, kube-proxy v1.35.4,
## CSI sidecars and test driver (cached), and the node's Debian packages (containerd, runc, CNI plugins)
sandbox-bins: node-deps
	bash tests/kube/build.sh $(KUBE_BIN)

## node-deps: apt-get install containerd, runc, CNI plugins, busybox-static, iptables (once; needs root)
node-deps:
	bash tests/kube/node-deps.sh

$(TOOLS)/workflowcheck:
	GOBIN=$(TOOLS) $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

# helm, pinned in tools/helm/go.mod (about 2 minutes cold)
$(TOOLS)/helm: tools/helm/go.mod tools/helm/go.sum
	cd tools/helm && GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v3/cmd/helm

# MinIO, pinned in tools/minio/go.mod to a pseudo-version (it publishes no
# semver tags; about 3 minutes cold)
$(TOOLS)/minio: tools/minio/go.mod tools/minio/go.sum
	cd tools/minio && GOBIN=$(TOOLS) $(GO) install github.com/minio/minio

# fake-gcs-server, pinned in tools/fakegcs/go.mod (about a minute cold)
$(TOOLS)/fake-gcs-server: tools/fakegcs/go.mod tools/fakegcs/go.sum
	cd tools/fakegcs && GOBIN=$(TOOLS) $(GO) install github.com/fsouza/fake-gcs-server

# Azurite from the npm registry, pinned (about 20 seconds)
$(AZURITE):
	npm install --no-audit --no-fund --prefix $(TOOLS)/azurite-$(AZURITE_VERSION) azurite@$(AZURITE_VERSION)

# The TypeScript example extension, from the npm registry (its lock file
# pins every package) and built with tsc, for the e2e test that runs it
# (about a minute cold)
TS_EXTENSION_SRC := examples/extensions/registry-rewriter
TS_EXTENSION_DIR := $(ROOT)/.cache/ts-extension
TS_EXTENSION := $(TS_EXTENSION_DIR)/dist/main.js
$(TS_EXTENSION): $(TS_EXTENSION_SRC)/package.json $(TS_EXTENSION_SRC)/package-lock.json $(TS_EXTENSION_SRC)/tsconfig.json $(TS_EXTENSION_SRC)/src/main.ts
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm build the TypeScript example extension: apt-get install nodejs npm"; exit 1; }
	rm -rf $(TS_EXTENSION_DIR) && mkdir -p $(TS_EXTENSION_DIR)
	cp -r $(TS_EXTENSION_SRC)/package.json $(TS_EXTENSION_SRC)/package-lock.json $(TS_EXTENSION_SRC)/tsconfig.json $(TS_EXTENSION_SRC)/src $(TS_EXTENSION_DIR)/
	cd $(TS_EXTENSION_DIR) && npm ci --no-audit --no-fund && npx tsc -p .

# The Velero plugin adapter is a module of its own, so that Velero's
# dependencies stay out of cairn's; make test vets, lints and tests it, and
# the e2e test builds it (about 3 minutes cold)
VELERO_ADAPTER_SRC := adapters/velero

# gotestsum runs `make test` and reads its slowest tests back
GOTESTSUM_VERSION := v1.13.0
$(TOOLS)/gotestsum:
	GOBIN=$(TOOLS) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)

# golangci-lint runs the house rules of .golangci.yml (about 2 minutes cold)
$(TOOLS)/golangci-lint:
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# controller-gen writes the CRDs and deep copies from api/v1alpha1's types
$(TOOLS)/controller-gen:
	GOBIN=$(TOOLS) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

tools: $(TOOLS)/workflowcheck $(TOOLS)/helm $(TOOLS)/gotestsum $(TOOLS)/controller-gen $(TOOLS)/golangci-lint

## generate: the CRDs in deploy/chart/crds and the deep copies, from api/v1alpha1's Go types
CONTROLLER_GEN = $(TOOLS)/controller-gen object paths=./api/v1alpha1 crd:crdVersions=v1
generate: $(TOOLS)/controller-gen
	$(CONTROLLER_GEN) output:crd:dir=$(CHART)/crds

## lint: gofmt, go vet, golangci-lint (.golangci.yml: errcheck, staticcheck, errors wrapped with %w, waits only through internal/clock, ...), generated files current, workflowcheck over workflows/, helm lint, and the chart renders
lint: tools
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags devserver ./cmd/cairn
	$(TOOLS)/golangci-lint run --timeout 10m ./...
	$(TOOLS)/golangci-lint run --timeout 10m --build-tags devserver ./cmd/cairn
	cd $(VELERO_ADAPTER_SRC) && $(GO) vet ./... && $(TOOLS)/golangci-lint run --timeout 10m ./...
	@tmp=$$(mktemp -d); cp api/v1alpha1/zz_generated.deepcopy.go $$tmp/deepcopy.go; \
	  $(CONTROLLER_GEN) output:crd:dir=$$tmp/crds; status=$$?; \
	  diff -r $$tmp/crds $(CHART)/crds && diff $$tmp/deepcopy.go api/v1alpha1/zz_generated.deepcopy.go || status=1; \
	  cp $$tmp/deepcopy.go api/v1alpha1/zz_generated.deepcopy.go; rm -rf $$tmp; \
	  if [ $$status != 0 ]; then echo "generated files are stale: run make generate"; exit 1; fi
	$(TOOLS)/workflowcheck -config workflowcheck.config.yaml ./workflows/...
	@grep -qx "version: $(RELEASE)" $(CHART)/Chart.yaml && grep -qx 'appVersion: "$(RELEASE)"' $(CHART)/Chart.yaml || \
	  { echo "deploy/chart/Chart.yaml: version and appVersion must be $(RELEASE), the VERSION file's"; exit 1; }
	$(TOOLS)/helm lint --strict $(CHART)
	$(TOOLS)/helm template cairn $(CHART) --namespace cairn-system > /dev/null
	$(TOOLS)/helm template cairn $(CHART) --namespace cairn-system -f $(CHART)/ci/all-on-values.yaml > /dev/null

## test: lint, unit tests, integration tests and end-to-end durability tests; ends with the
## 15 slowest tests and the time taken (budget: 25 minutes on 2 cores once .cache is built)
TEST_REPORT := $(ROOT)/.cache/test-report.json
# ./tests/e2e is named first so that it starts first: it takes most of the
# time, and the other packages run beside it instead of before it.
test: lint sandbox-bins $(TOOLS)/minio $(TOOLS)/fake-gcs-server $(AZURITE) $(TS_EXTENSION) $(TOOLS)/gotestsum
	@start=$$(date +%s); status=0; \
	  (cd $(VELERO_ADAPTER_SRC) && $(GO) test -count=1 ./...) || status=$$?; \
	  $(TOOLS)/gotestsum --format standard-quiet --jsonfile $(TEST_REPORT) -- -count=1 -timeout 75m -p 2 -parallel 3 ./tests/e2e ./... || status=$$?; \
	  echo "--- the 15 slowest tests:"; \
	  $(TOOLS)/gotestsum tool slowest --jsonfile $(TEST_REPORT) --threshold 1ms | awk '$$2 !~ /\//' | head -15; \
	  echo "--- go test took $$(( $$(date +%s) - start )) s (budget: 1500 s)"; \
	  exit $$status

## chaos: a backup and a restore with moved data while random SIGKILLs hit the worker, Temporal and data movers (not in test; CAIRN_CHAOS_SEED=N replays a run)
chaos: sandbox-bins
	CAIRN_CHAOS=1 $(GO) test -count=1 -timeout 60m -v -run '^TestChaos$$' ./tests/e2e

## test-unit: only the fast tests (no sandbox, no processes)
test-unit:
	$(GO) test -count=1 -short ./...
	cd $(VELERO_ADAPTER_SRC) && $(GO) test -count=1 -short ./...

## velero-adapter: bin/cairn-velero-adapter, which serves Velero item-action plugins as a cairn
## extension (docs/velero-plugins.md), and bin/velero-plugins/exampleplugin, a plugin to try it with
velero-adapter:
	cd $(VELERO_ADAPTER_SRC) && $(GO) build -o $(BIN)/cairn-velero-adapter . && $(GO) build -o $(BIN)/velero-plugins/exampleplugin ./exampleplugin

## test-e2e: only the end-to-end tests, against real processes; RUN=regexp picks tests by name
test-e2e: sandbox-bins $(TOOLS)/minio $(TOOLS)/fake-gcs-server $(AZURITE) $(TS_EXTENSION)
	$(GO) test -count=1 -timeout 60m -p 1 $(if $(RUN),-run '$(RUN)') ./tests/e2e

## record-histories: re-record workflows/testdata, one real history per workflow type (after a release)
RECORD_TESTS := TestBadInput|TestWholeClusterBackupListsAHugeTypeByNamespace|TestRestoreRoundTrip|TestSchedules|TestEtcdSnapshots|TestBackupDeletionAndExpiry|TestVolumeSnapshots$$|TestDataMovement|TestRestoreFromMovedData|TestRepositoryStepsSurviveAWorkerKill|TestChecksumsFindCorruptBackups|TestExtensionOperations|TestBackupExtensions|TestNamespaceRunsInAnotherCluster|TestDataMoverPodsOnTheNode
record-histories: sandbox-bins
	CAIRN_RECORD_HISTORY=1 $(GO) test -count=1 -timeout 45m -p 1 -run '$(RECORD_TESTS)' ./tests/e2e
	$(GO) test -count=1 -run TestReplayRecordedHistories ./workflows

## demo: cairn dev --sandbox, a sample app, a backup; stays up until Ctrl-C
demo: build sandbox-bins
	bash scripts/demo.sh $(BIN)/cairn

## bench: backup vs plain LIST of N ConfigMaps, one JSON line (N=100000 for the big run)
bench: build sandbox-bins
	$(GO) run ./tests/bench -cairn $(BIN)/cairn -n $(N) $(if $(PROFILE),-worker-profile $(abspath $(PROFILE)))

## kopia-cli: the kopia v0.23.1 command line, reference of the data path bench (cached)
$(KOPIA_BIN)/kopia:
	cd tests/bench/kopiacli && $(GO) build -o $(KOPIA_BIN)/kopia github.com/kopia/kopia

kopia-cli: $(KOPIA_BIN)/kopia

## bench-datapath: volume data upload, re-upload and restore vs the kopia CLI on DATA_MB MiB, one JSON line
bench-datapath: $(KOPIA_BIN)/kopia
	$(GO) run ./tests/bench -kind datapath -kopia $(KOPIA_BIN)/kopia -data-mb $(DATA_MB)

## bench-fs: file-system backup and restore of DATA_MB MiB in a pod's emptyDir on the sandbox node vs the kopia CLI (root), one JSON line
bench-fs: build sandbox-bins $(KOPIA_BIN)/kopia
	$(GO) run ./tests/bench -cairn $(BIN)/cairn -kind fs -kopia $(KOPIA_BIN)/kopia -data-mb $(DATA_MB)

## bench-restore: restore of N ConfigMaps into an empty cluster vs a plain create loop, one JSON line
bench-restore: build sandbox-bins
	$(GO) run ./tests/bench -cairn $(BIN)/cairn -n $(N) -kind restore $(if $(PROFILE),-worker-profile $(abspath $(PROFILE)) -profile-seconds 10)

## bench-extension: backup of N ConfigMaps with a no-op extension registered for them vs without, one JSON line
bench-extension: build sandbox-bins
	$(GO) run ./tests/bench -cairn $(BIN)/cairn -n $(N) -kind extension

clean:
	rm -rf $(BIN) $(DIST) .cairn
