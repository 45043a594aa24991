# ponens — make targets. `make test` is what CI runs (.ci/run).
GO      ?= go
BIN     := bin/ponens
PKGS    := ./...
# Packages with goroutines of their own: run under the race detector.
RACE_PKGS := ./monitor/... ./trace/... ./schema/... ./ingest/... ./sink/... ./transport/... ./query/...
FUZZTIME ?= 30s
# Minimising a new input must end well before FUZZTIME does.
FUZZMINTIME ?= 1s
DIFF_CASES ?= 200000
# `ponens version` prints these; without them the binary reports what the Go
# toolchain recorded (module version, VCS revision).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

HELM_VERSION ?= v3.21.4
HELM_BIN := $(HOME)/.cache/ponens/bin

.PHONY: all deps chdb helm build install test test-race lint bench fuzz fuzz-smoke run check-examples clean

all: build

## deps: download Go modules and install libchdb (the embedded store's engine) into the user's cache directory
deps: chdb
	$(GO) mod download

## chdb: install libchdb (skipped when present); the store's tests need it
chdb:
	scripts/install-chdb

## helm: install helm $(HELM_VERSION) into ~/.cache/ponens/bin (skipped when present), built from its Go module; the Helm chart's tests render the chart with it and are skipped without it
helm:
	@test -x $(HELM_BIN)/helm || GOBIN=$(HELM_BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	@$(HELM_BIN)/helm version --short

## build: build bin/ponens
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ponens

## install: install ponens into $(go env GOBIN), else $(go env GOPATH)/bin: put that directory on your PATH
install:
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/ponens
	@echo "installed $$( { $(GO) env GOBIN; } | grep . || echo $$($(GO) env GOPATH)/bin)/ponens"

## test: formatting, vet, every test, and the race detector on the concurrent packages
test: lint chdb
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -race $(RACE_PKGS)
	@test -n "$$PONENS_CLICKHOUSE_DSN" || echo "skipped: the ClickHouse server-path tests (PONENS_CLICKHOUSE_DSN is unset); to run them, set PONENS_CLICKHOUSE_DSN=clickhouse://user:password@host:9000/db and run make test"

## test-race: the race detector over everything
test-race:
	$(GO) test -count=1 -race $(PKGS)

## lint: gofmt and go vet must be clean
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## bench: the monitor's benchmarks (figures in docs/performance.md) and the store's (docs/storage.md)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./monitor/ ./policy/...
	$(GO) test -run '^$$' -bench . -benchtime 20x ./sink/chdb/

## fuzz: every fuzz target for FUZZTIME each, and a long differential run
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMINTIME=$(FUZZMINTIME) scripts/fuzz
	$(GO) test ./monitor/ -run TestDifferential -diff.cases=$(DIFF_CASES) -count=1

## fuzz-smoke: every fuzz target for 5 s and a short differential run (CI runs it after the tests)
fuzz-smoke:
	$(MAKE) fuzz FUZZTIME=5s DIFF_CASES=20000

## run: install the embedded ClickHouse engine if missing, build, start `ponens serve` (embedded NATS JetStream and ClickHouse store, workers, alerts) with a demo fleet; Ctrl-C stops
run: chdb build
	$(BIN) serve --rules examples/rules --demo

## check-examples: check the bundled example traces against the example rules, offline
check-examples: build
	$(BIN) check --rules examples/rules --out examples/out examples/traces || test $$? -eq 1

clean:
	rm -rf bin examples/out data
