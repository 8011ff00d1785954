# KICK — build, generate, test and demo.
#
# The Argo CD API module needs Go 1.27; the go command fetches that toolchain
# from the module proxy on first use. Export it for plain `go` commands too.
export GOTOOLCHAIN := go1.27.3

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

ROOT      := $(CURDIR)
BIN       := $(ROOT)/bin
K8S_BIN   := $(BIN)/k8s
GITOPS_BIN := $(BIN)/gitops
GO        ?= go
# Packages that need no cluster: everything outside integration/.
UNIT_PKGS  = $(shell GOTOOLCHAIN=$(GOTOOLCHAIN) $(GO) list ./... | grep -v '/integration')
# Integration packages on the control plane alone; integration/e2e also runs
# the real GitOps controllers and has a target of its own (make e2e).
INTEGRATION_PKGS = $(shell GOTOOLCHAIN=$(GOTOOLCHAIN) $(GO) list ./integration/... | grep -v '/integration/e2e')

# The version both binaries report (kick-manager --version, kubectl kick
# version); a release build sets it from the tag it is cut from.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)

CONTROLLER_GEN := $(BIN)/controller-gen
# RBAC: the core role comes from these packages; each optional integration
# gets its own role (deploy/rbac/NAME), granted only when it is enabled.
CORE_RBAC_PKGS := ./cmd/... ./restart/request/... ./restart/observe/... ./restart/policy/... ./sinks/...
INTEGRATIONS   := argocd=./gitops/argocd flux=./gitops/flux kargo=./gitops/kargo \
	argo-rollouts=./restart/rollout secrets-store-csi=./restart/csi preflight=./restart/preflight/certs
# The Helm chart and the kustomize components of the integrations that are off
# by default get copies of the generated CRDs and roles: helm packages only the
# chart's directory, and kustomize loads files only from below a component's
# own directory. verify-generated catches a copy that drifted.
CHART          := deploy/chart/kick
COMPONENTS     := kargo argo-rollouts secrets-store-csi preflight

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-18s %s\n",$$1,$$2}'

##@ Build

.PHONY: build
build: build-lean ## build bin/kick-manager (lean), bin/kick-manager-argocd, bin/kubectl-kick, bin/kick-devcluster
	# The manager twice: kick-manager leaves the Argo CD integration out and
	# hands over to kick-manager-argocd on clusters that serve Argo CD.
	# CGO_ENABLED=0, as in the image: with cgo, the plugin package (kustomize's
	# plugin loader, which the Argo CD types pull in) makes the linker export
	# every symbol, 19 MB of dynamic symbol tables in kick-manager-argocd.
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -tags grpcnotrace -o $(BIN)/kick-manager-argocd ./cmd/kick-manager

.PHONY: build-lean
build-lean: ## build what `make demo` runs: bin/kick-manager (lean), bin/kubectl-kick, bin/kick-devcluster (no Argo CD types to compile)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/kubectl-kick ./cmd/kick-devcluster
	# grpcnotrace: gRPC (the OTLP trace exporter) without golang.org/x/net/trace,
	# whose html/template keeps every method in the binary (+26 MB).
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -tags noargocd,grpcnotrace -o $(BIN)/kick-manager ./cmd/kick-manager

.PHONY: control-plane
control-plane: ## build (once, cached under bin/k8s) etcd, kube-apiserver, controller-manager, scheduler, kwok; collect upstream CRDs
	@hack/controlplane/build.sh "$(K8S_BIN)"

.PHONY: gitops-controllers
gitops-controllers: ## build (once, cached under bin/gitops) Argo CD's application controller and repo-server, Flux's source- and kustomize-controller, the Argo Rollouts controller
	@hack/gitops/build.sh "$(GITOPS_BIN)"

.PHONY: helm-controller
helm-controller: ## build Flux's helm-controller v1.6.3 into bin/helm-controller from a checkout (HELM_CONTROLLER_SRC=dir; the module proxy refuses it) for the opt-in HelmRelease e2e tests
	@test -n "$(HELM_CONTROLLER_SRC)" || { echo "set HELM_CONTROLLER_SRC to a checkout of github.com/fluxcd/helm-controller at v1.6.3 (docs/guides/flux.md)"; exit 1; }
	@hack/gitops/build-helm-controller.sh "$(HELM_CONTROLLER_SRC)" "$(BIN)/helm-controller"
	@echo "run the HelmRelease e2e tests with: KICK_HELM_CONTROLLER=$(BIN)/helm-controller make e2e"

##@ Release

DIST           ?= $(ROOT)/dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
RELEASE_URL    ?= https://github.com/kick-operator/kick/releases/download/$(VERSION)
IMAGE          ?= ghcr.io/kick-operator/kick

.PHONY: dist
dist: ## release build into dist/: kick-manager and kubectl-kick for DIST_PLATFORMS with VERSION injected, the Helm chart, SHA256SUMS, the krew manifest
	VERSION="$(VERSION)" DIST="$(DIST)" DIST_PLATFORMS="$(DIST_PLATFORMS)" RELEASE_URL="$(RELEASE_URL)" GO="$(GO)" hack/release/dist.sh

.PHONY: dist-check
dist-check: ## make dist for this machine's platform only, then check versions, checksums, chart and krew manifest (not part of make test)
	@hack/release/check-dist.sh

.PHONY: image
image: ## the manager's container image, IMAGE:VERSION, with VERSION injected
	docker build --build-arg VERSION="$(VERSION)" -t "$(IMAGE):$(VERSION)" .

##@ Generate

$(CONTROLLER_GEN): hack/tools/go.mod
	cd hack/tools && $(GO) build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## deepcopy, CRDs (deploy/crds) and RBAC (deploy/rbac) from the Go markers; copies for the chart and components
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./restart/rollout/... paths=./restart/csi/...
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=false paths=./api/... output:crd:artifacts:config=deploy/crds
	$(CONTROLLER_GEN) rbac:roleName=kick-manager $(foreach p,$(CORE_RBAC_PKGS),paths=$(p)) output:rbac:artifacts:config=deploy/rbac
	@for i in $(INTEGRATIONS); do name=$${i%%=*}; pkg=$${i#*=}; \
		$(CONTROLLER_GEN) rbac:roleName=kick-manager-$$name paths=$$pkg output:rbac:artifacts:config=deploy/rbac/$$name; done
	rm -rf $(CHART)/crds $(CHART)/files/rbac
	mkdir -p $(CHART)/crds $(CHART)/files/rbac
	cp deploy/crds/kick.corewire.io_*.yaml $(CHART)/crds/
	cp deploy/rbac/role.yaml $(CHART)/files/rbac/core.yaml
	@for i in $(INTEGRATIONS); do name=$${i%%=*}; cp deploy/rbac/$$name/role.yaml $(CHART)/files/rbac/$$name.yaml; done
	@for name in $(COMPONENTS); do cp deploy/rbac/$$name/role.yaml deploy/components/$$name/role.yaml; done
	$(GO) run ./hack/apidocs -crds deploy/crds -out docs/reference/api.md

.PHONY: verify-generated
verify-generated: generate ## fail when generated files differ from what is committed
	@if ! git diff --quiet -- api deploy docs/reference/api.md || [ -n "$$(git status --porcelain --untracked-files=all -- api deploy docs/reference/api.md)" ]; then \
		echo "generated files are stale; run 'make generate' and commit the result:"; \
		git status --porcelain --untracked-files=all -- api deploy; git --no-pager diff --stat -- api deploy; exit 1; fi
	@echo "generated files are up to date"

##@ Check

.PHONY: lint
lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags noargocd,grpcnotrace ./cmd/kick-manager
	@if [ ! -x $(BIN)/staticcheck ]; then GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2 || echo "staticcheck could not be installed; skipped"; fi
	@if [ -x $(BIN)/staticcheck ]; then $(BIN)/staticcheck ./...; fi

.PHONY: unit
unit: ## unit tests (race detector), no cluster needed; fuzz targets run their seed corpus only
	$(GO) test -race -count=1 $(UNIT_PKGS)

# Fuzz targets (func FuzzXxx in a tracked *_test.go). `go test` runs only their
# seed corpus (and testdata/fuzz/); `make fuzz` mutates inputs for FUZZTIME per
# target. A failing input is saved under the package's testdata/fuzz/NAME:
# commit it with the fix, and every later `go test` replays it.
FUZZTIME  ?= 30s
FUZZFLAGS ?=

.PHONY: fuzz
fuzz: ## run every Fuzz* target for FUZZTIME each (default 30s)
	@targets=$$(git ls-files '*_test.go' | xargs grep -HoE '^func Fuzz[A-Za-z0-9_]*' | sed -E 's|^(.*)/[^/]*_test\.go:func |\1 |' | sort -u); \
	if [ -z "$$targets" ]; then echo "no fuzz targets found"; exit 1; fi; \
	echo "$$targets" | while read -r dir name; do \
		echo "== $$name in ./$$dir for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./$$dir || exit 1; \
	done

.PHONY: integration
integration: control-plane build ## integration tests on the local control plane
	KICK_K8S_BIN=$(K8S_BIN) KICK_BIN=$(BIN) $(GO) test -count=1 -timeout 40m -p 1 $(INTEGRATION_PKGS)

.PHONY: e2e
e2e: control-plane gitops-controllers build ## end-to-end tests against the real Argo CD, Flux and Argo Rollouts controllers and a loopback git server (needs git, redis-server)
	KICK_K8S_BIN=$(K8S_BIN) KICK_BIN=$(BIN) KICK_GITOPS_BIN=$(GITOPS_BIN) $(GO) test -count=1 -timeout 30m -p 1 -v ./integration/e2e/ 2>&1 | tee $(BIN)/e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|integration:)|_test.go'

# Kargo's controller cannot be built from the module proxy (CI cannot build
# it): KARGO_SRC is a git repository of github.com/akuity/kargo holding the
# release tag hack/gitops/build-kargo.sh pins (docs/guides/kargo.md).
KARGO_BIN := $(BIN)/kargo

.PHONY: kargo-controller
kargo-controller: ## build Kargo's controller from KARGO_SRC (a git repository of github.com/akuity/kargo) into bin/kargo; opt-in, not in CI
	@test -n "$(KARGO_SRC)" || { echo "set KARGO_SRC to a git repository of github.com/akuity/kargo"; exit 1; }
	@hack/gitops/build-kargo.sh "$(KARGO_SRC)" "$(KARGO_BIN)"

.PHONY: integration-kargo
integration-kargo: control-plane build ## the Kargo gate against the real Kargo controller (TestKargoController; needs make kargo-controller first)
	@test -x "$(KARGO_BIN)/kargo" || { echo "no $(KARGO_BIN)/kargo: run make kargo-controller KARGO_SRC=..."; exit 1; }
	KICK_K8S_BIN=$(K8S_BIN) KICK_BIN=$(BIN) KICK_KARGO_BIN=$(KARGO_BIN)/kargo $(GO) test -count=1 -timeout 15m -p 1 -v -run 'TestKargoController' ./integration/kargo/

.PHONY: fuzz-brief
fuzz-brief: ## every Fuzz* target for 2s each (part of make test)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=2s

# Benchmarks (func BenchmarkXxx in a tracked *_test.go) are not run by `go test`
# without -bench, so a broken one would go unnoticed while the docs quote its
# figures. bench-smoke runs each once (-benchtime 1x): a check that it still
# works, not a measurement. The integration packages' benchmarks need the
# local control plane, as `make integration` does, and run 40 iterations: the
# fewest integration/preflight's BenchmarkSecretUpdate accepts (it compares
# updates with and without the webhook, switching every 10).
.PHONY: bench-smoke
bench-smoke: control-plane build ## every Benchmark* once, as a test (part of make test)
	@pkgs=$$(git ls-files '*_test.go' | xargs grep -l '^func Benchmark' | xargs -n1 dirname | sort -u | sed 's|^|./|'); \
	if [ -z "$$pkgs" ]; then echo "no benchmarks found"; exit 1; fi; \
	unit=$$(echo "$$pkgs" | grep -v '^./integration/'); integ=$$(echo "$$pkgs" | grep '^./integration/'); \
	$(GO) test -count=1 -timeout 20m -run '^$$' -bench . -benchtime 1x $$unit && \
	{ [ -z "$$integ" ] || KICK_K8S_BIN=$(K8S_BIN) KICK_BIN=$(BIN) $(GO) test -count=1 -p 1 -timeout 20m -run '^$$' -bench . -benchtime 40x $$integ; }

.PHONY: test
test: lint verify-generated unit fuzz-brief bench-smoke integration ## everything CI runs

.PHONY: chaos
chaos: control-plane build ## fault suite, long form: manager SIGKILLs, leader failover, kube-apiserver and etcd outages under 200 Deployments; prints the figures (docs/operations/reliability.md)
	KICK_CHAOS=full KICK_K8S_BIN=$(K8S_BIN) KICK_BIN=$(BIN) $(GO) test -count=1 -timeout 60m -p 1 -v ./integration/chaos/ 2>&1 | tee $(BIN)/chaos.log
	@grep -ho 'chaos: .*' $(BIN)/chaos.log

# The hostile-tenant soak (issue 32): one manager under a 256 MiB memory
# limit (a cgroup when the machine allows one, else GOMEMLIMIT and an RSS
# watchdog), a bystander tenant changing Secrets every 2 s, first alone and
# then while every attack runs. SOAK_DURATION is the length of each run.
# The tenants and KICK are ServiceAccounts and the API server runs API
# Priority and Fairness (SOAK_APF=false turns it off); SOAK_APISERVER_FLAGS
# adds kube-apiserver flags (e.g. --max-requests-inflight=N).
SOAK_DURATION ?= 3m
SOAK_APF ?= true
SOAK_APISERVER_FLAGS ?=

.PHONY: soak-hostile
soak-hostile: control-plane build ## hostile-tenant soak: every attack of issue 32 against a 256 MiB manager while a bystander changes Secrets, SOAK_DURATION (3m) alone then attacked; prints the figures (docs/operations/security.md)
	KICK_SOAK=$(SOAK_DURATION) KICK_SOAK_APF=$(SOAK_APF) KICK_SOAK_APISERVER_FLAGS="$(SOAK_APISERVER_FLAGS)" KICK_K8S_BIN=$(K8S_BIN) KICK_BIN=$(BIN) $(GO) test -count=1 -timeout 120m -p 1 -v -run TestHostileTenantSoak ./integration/soak/ 2>&1 | tee $(BIN)/soak.log
	@grep -ho '^soak: .*' $(BIN)/soak.log

.PHONY: bench
bench: control-plane build ## benchmark a restart controller on the local control plane (BENCH_FLAGS=-quick for a smoke run; SCENARIO=fanout runs bench-fanout)
ifeq ($(SCENARIO),fanout)
	$(MAKE) bench-fanout
else
	$(GO) run ./integration/bench -bin-dir $(K8S_BIN) $(BENCH_FLAGS)
endif

.PHONY: bench-fanout
bench-fanout: control-plane build ## fan-out: 500 Deployments share one Secret, one change, with restart.maxConcurrent 10, with no limit, and with 10 in waves (canary of 5, bake 20s, then main); writes bench-fanout.json and docs/images/fanout.png
	$(GO) run ./integration/bench -bin-dir $(K8S_BIN) -fanout "$(or $(BUDGETS),10$(comma)none$(comma)10+waves)" -json bench-fanout.json -plot docs/images/fanout.png $(BENCH_FLAGS)

comma := ,
.PHONY: bench-scale
bench-scale: control-plane build ## the scale curve: floor, KICK and Reloader (RELOADER=path) at SCALES (default 1,5,10) of 200 Deployments, 10,000 Secrets, 5,000 ConfigMaps; writes bench-scale.json and docs/images/scale.png
	$(GO) build -o $(BIN)/bench-floor ./integration/bench/floor
	$(GO) run ./integration/bench -bin-dir $(K8S_BIN) -scales "$(or $(SCALES),1$(comma)5$(comma)10)" -peers "floor,kick$(if $(RELOADER),$(comma)reloader=$(RELOADER))" \
		-json bench-scale.json -plot docs/images/scale.png $(BENCH_FLAGS)

.PHONY: bench-peers
bench-peers: control-plane build ## the floor, KICK and stakater/Reloader (RELOADER=path/to/binary, see hack/bench/build-reloader.sh) on one fixture: one table of ratios
	$(GO) build -o $(BIN)/bench-floor ./integration/bench/floor
	$(GO) run ./integration/bench -bin-dir $(K8S_BIN) -peers "floor,kick$(if $(RELOADER),$(comma)reloader=$(RELOADER))" $(BENCH_FLAGS)

##@ Run

.PHONY: devcluster
devcluster: control-plane build ## run the local control plane in the foreground (Ctrl-C stops it)
	$(BIN)/kick-devcluster up --dir $(ROOT)/.demo/cluster --bin-dir $(K8S_BIN) --crds upstream

.PHONY: devcluster-gitops
devcluster-gitops: control-plane gitops-controllers build ## the local control plane with the real Argo CD, Flux and Argo Rollouts controllers and a git server
	$(BIN)/kick-devcluster up --dir $(ROOT)/.demo/cluster --bin-dir $(K8S_BIN) --gitops argocd,flux,rollouts --gitops-bin-dir $(GITOPS_BIN)

.PHONY: demo
demo: control-plane build-lean ## start the local control plane, install KICK, show a restart (and a hold)
	@hack/demo.sh "$(BIN)" "$(K8S_BIN)"

.PHONY: demo-gitops
demo-gitops: control-plane gitops-controllers build ## the demo with the real Argo CD: a restart held by an AppProject deny window, released when it ends
	@hack/demo-gitops.sh "$(BIN)" "$(K8S_BIN)" "$(GITOPS_BIN)"
