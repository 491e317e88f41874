# redrive: build, run and test the Go/WASM worker. `make help` lists targets.
SHELL := bash
WRANGLER := npx --no-install wrangler
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GO_SOURCES := $(shell find . -name '*.go' -not -path './node_modules/*' -not -path './build/*' -not -name '*_test.go') go.mod go.sum
PERSIST := .wrangler/state
export WRANGLER_SEND_METRICS := false

.PHONY: help bench bench-rows build dev test test-native test-e2e vet fmt deploy migrate-local clean node_modules mutate

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: build/app.wasm ## build the worker (build/worker.mjs + build/app.wasm)

# workers-assets-gen provides wasm_exec.js; redrive's own entry module
# (one Go instance per isolate, see platform/worker/worker.mjs) replaces its worker.mjs.
build/worker.mjs: platform/worker/worker.mjs platform/worker/queuebody.mjs
	go run github.com/syumai/workers/cmd/workers-assets-gen -mode=go -o build
	rm -f build/runtime.mjs
	cp platform/worker/worker.mjs platform/worker/queuebody.mjs build/

build/app.wasm: build/worker.mjs $(GO_SOURCES)
	GOOS=js GOARCH=wasm go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o build/app.wasm .

node_modules: node_modules/.package-lock.json
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

.dev.vars:
	cp .dev.vars.example .dev.vars

migrate-local: node_modules ## apply migrations to the local D1 (.wrangler/state)
	$(WRANGLER) d1 migrations apply beer-db --local --persist-to $(PERSIST)

dev: node_modules .dev.vars build migrate-local ## run the worker locally (local D1 + queues) on :8787
	$(WRANGLER) dev --local --persist-to $(PERSIST) --test-scheduled --port 8787

vet: ## go vet, native and js/wasm
	go vet ./...
	GOOS=js GOARCH=wasm go vet . ./platform

fmt: ## gofmt -w
	gofmt -w $$(git ls-files '*.go')

test-native: ## unit tests against SQLite, and the entry module's own under node
	go test -count=1 ./...
	node --test platform/worker/

test-e2e: node_modules build ## end-to-end tests in workerd (wrangler dev)
	go test -count=1 -tags e2e -timeout 20m -v ./e2e

test: vet test-native test-e2e ## everything CI runs

bench: node_modules build ## measure the worker in workerd; writes bench-results/latest.json (and rows.json)
	REDRIVE_BENCH=1 go test -count=1 -tags e2e -run '^TestBench$$' -timeout 45m -v ./e2e

bench-rows: node_modules build ## only D1 rows read/written per operation at 100k and 1M rows (bench-results/rows.json)
	REDRIVE_BENCH=1 go test -count=1 -tags e2e -run '^TestRowsBench$$' -timeout 30m -v ./e2e

# Mutation testing with gremlins (pinned): every covered mutant of the Go
# code must make some test fail. It reports each mutant KILLED or LIVED and
# the efficacy (killed / (killed + lived)); about 10-20 min per package on
# 2 cores. SQL strings are not mutated: their conditions are pinned by tests.
GREMLINS := go run github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
MUTATE_PKGS ?= ./dlq ./enrichment ./handlers
mutate: ## mutation testing of dlq, enrichment, handlers (MUTATE_PKGS=./dlq for one)
	@for p in $(MUTATE_PKGS); do echo "== $$p"; $(GREMLINS) unleash --invert-logical --timeout-coefficient 5 $$p || exit 1; done

deploy: node_modules build ## deploy to Cloudflare (needs wrangler login)
	$(WRANGLER) d1 migrations apply beer-db --remote
	$(WRANGLER) deploy

clean:
	rm -rf build
