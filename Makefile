# redrive: build, run and test the Go/WASM worker. `make help` lists targets.
SHELL := bash
WRANGLER := npx --no-install wrangler
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# What the wasm is built from: every non-test Go file, go.mod and go.sum.
GO_SOURCES := $(shell find . -name '*.go' -not -path './node_modules/*' -not -path './build/*' -not -path './.tinygo/*' -not -path './third_party/*' -not -name '*_test.go') go.mod go.sum
# The wasm is built with TinyGo (scripts/tinygo.sh, which installs the
# toolchain under .tinygo/ when missing); TINYGO=0 builds it with standard Go.
BUILD_MODE := $(if $(filter 0,$(TINYGO)),go,tinygo)
PERSIST := .wrangler/state
export WRANGLER_SEND_METRICS := false

.PHONY: FORCE fmt-check tinygo help lighthouse bench bench-init bench-workerd bench-retention bench-rows bench-scale build dev test test-native test-ts-client test-e2e vet fmt deploy migrate-local clean node_modules mutate

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: build/app.wasm build/console/index.html ## build the worker (build/worker.mjs + build/app.wasm, with TinyGo) and the console (build/console); TINYGO=0 builds the wasm with standard Go

# The operator console: console/src bundled by esbuild (pinned in
# package-lock.json) with console/public into build/console, which
# wrangler.jsonc serves as static assets. Fails over 150 KB gzipped.
CONSOLE_SOURCES := $(wildcard console/src/* console/public/*) console/build.mjs
build/console/index.html: node_modules/.package-lock.json $(CONSOLE_SOURCES)
	node console/build.mjs

# build/mode names the toolchain of the last build (go or tinygo): switching
# rebuilds wasm_exec.js and app.wasm.
build/mode: FORCE
	@mkdir -p build; [ "$$(cat $@ 2>/dev/null)" = "$(BUILD_MODE)" ] || echo $(BUILD_MODE) >$@

# workers-assets-gen provides wasm_exec.js (standard Go's or TinyGo's, same
# interface); redrive's own entry module (one Go instance per isolate, see
# platform/worker/worker.mjs) replaces its worker.mjs.
build/worker.mjs: build/mode platform/worker/worker.mjs platform/worker/queuebody.mjs platform/worker/headers.mjs platform/worker/answers.mjs platform/worker/body.mjs
	go run github.com/syumai/workers/cmd/workers-assets-gen -mode=$(BUILD_MODE) -o build
	echo $(BUILD_MODE) >build/mode # workers-assets-gen empties build/
	rm -f build/runtime.mjs
	cp platform/worker/worker.mjs platform/worker/queuebody.mjs platform/worker/headers.mjs platform/worker/answers.mjs platform/worker/body.mjs build/

build/app.wasm: build/mode build/worker.mjs $(GO_SOURCES)
ifeq ($(BUILD_MODE),tinygo)
	nice -n 10 scripts/tinygo.sh build build/app.wasm -ldflags "-X main.version=$(VERSION)"
else
	GOOS=js GOARCH=wasm go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o build/app.wasm .
endif

tinygo: ## install the TinyGo toolchain under .tinygo/ (Debian's LLVM 19, wasi-libc; see scripts/tinygo.sh); make build does it when missing
	scripts/tinygo.sh setup

node_modules: node_modules/.package-lock.json
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

.dev.vars:
	cp .dev.vars.example .dev.vars

# Every D1 binding of wrangler.jsonc (DB and each pipeline's own database)
# gets the migrations, each but DB then its id range (cmd/migrate).
migrate-local: node_modules ## apply migrations to every local D1 database of wrangler.jsonc (.wrangler/state)
	go run ./cmd/migrate -local -persist-to $(PERSIST) -wrangler "$(WRANGLER)"

# The local stand-in for the enrichment provider (cmd/devprovider), which
# .dev.vars.example points ENRICHMENT_API_URL at; stopped with wrangler dev.
DEV_PROVIDER_ADDR ?= 127.0.0.1:8788
build/devprovider: cmd/devprovider/main.go internal/fakeprovider/fakeprovider.go
	go build -o $@ ./cmd/devprovider

# The cron ticker (cmd/devcron): wrangler dev never fires the crons itself,
# so make dev fires wrangler.jsonc's triggers at their times through
# /__scheduled. DEV_CRON_SPEED=60 runs the schedule 60x faster.
DEV_CRON_SPEED ?= 1
build/devcron: cmd/devcron/main.go internal/wranglerconfig/wranglerconfig.go
	go build -o $@ ./cmd/devcron

# The local stand-in for Cloudflare Access (cmd/devaccess), which
# .dev.vars.example points ACCESS_TEAM_DOMAIN at: it issues tokens
# (POST /token) that the worker signs in (docs/operations.md "Access control").
DEV_ACCESS_ADDR ?= 127.0.0.1:8789
build/devaccess: cmd/devaccess/main.go $(wildcard access/cfaccess/cfaccesstest/*.go)
	go build -o $@ ./cmd/devaccess

# The local stand-in for where alerts go (cmd/devreceiver): a Standard
# Webhooks endpoint (POST /webhook, signed with its dev secret), a PagerDuty
# Events API v2 endpoint (POST /v2/enqueue) and a Slack webhook (POST
# /slack); GET /__received shows what came (docs/development.md "Seeing alerts locally").
DEV_RECEIVER_ADDR ?= 127.0.0.1:8790
build/devreceiver: cmd/devreceiver/main.go $(filter-out %_test.go,$(wildcard internal/receiver/*.go alerts/*.go))
	go build -o $@ ./cmd/devreceiver

dev: node_modules .dev.vars build migrate-local build/devprovider build/devaccess build/devreceiver build/devcron ## run the worker locally (local D1 + queues + stand-in provider, Access and alert receiver + cron ticker) on :8787
	@build/devprovider -addr $(DEV_PROVIDER_ADDR) & pid=$$!; \
	build/devaccess -addr $(DEV_ACCESS_ADDR) & apid=$$!; \
	build/devreceiver -addr $(DEV_RECEIVER_ADDR) & rpid=$$!; \
	build/devcron -url http://127.0.0.1:8787 -speed $(DEV_CRON_SPEED) & cpid=$$!; \
	trap 'kill $$pid $$apid $$rpid $$cpid 2>/dev/null' EXIT; \
	$(WRANGLER) dev --local --persist-to $(PERSIST) --test-scheduled --port 8787

vet: fmt-check ## go vet, native and js/wasm (after fmt-check)
	go vet ./...
	GOOS=js GOARCH=wasm go vet . ./platform

# goimports formats like gofmt and groups imports: the standard library,
# then other modules, then this module's packages (-local). Generated code
# (client/client.gen.go) and third_party are left as they come.
GOIMPORTS := go run golang.org/x/tools/cmd/goimports@v0.52.0 -local github.com/redrive/redrive
# The Go files make fmt formats (tests included; a shell substitution, run
# by the recipe).
FMT_GO_FILES = $$(git ls-files '*.go' ':!third_party' ':!client/client.gen.go')
fmt: ## goimports -local -w: format every Go file and group its imports
	$(GOIMPORTS) -w $(FMT_GO_FILES)

fmt-check: ## fail, naming the files, when make fmt would change one (make vet runs it, so CI does)
	@out=$$($(GOIMPORTS) -l $(FMT_GO_FILES)); if [ -n "$$out" ]; then echo "make fmt would change:"; echo "$$out"; exit 1; fi

test-native: test-ts-client ## unit tests against SQLite, and the entry module's and the JavaScript report helper's under node
	go test -count=1 -timeout 30m ./...
	node --test platform/worker/ clients/js/ handlers/

# A TypeScript client generated from handlers/openapi.json by openapi-typescript
# (defaults; pinned in package-lock.json) must type-check the calls of README.md and docs/*.md
# and reject what the API rejects (client/ts/readme_calls.ts).
test-ts-client: node_modules ## type-check the calls of README.md and docs/ against the document's TypeScript types
	npm run --silent check:ts-client

test-e2e: node_modules build ## end-to-end tests in workerd (wrangler dev)
	go test -count=1 -tags e2e -timeout 80m -v ./e2e

test: vet test-native test-e2e ## everything CI runs

# Lighthouse (pinned in package.json) on the console's sign-in, overview,
# failures and groups pages in Debian Chromium (/usr/bin/chromium), against
# the built worker with demo data (e2e/lighthouse_test.go runs
# scripts/lighthouse.mjs). Fails under performance 98, accessibility or best
# practices 100, or any layout shift. Not in CI.
LIGHTHOUSE_RUNS ?= 3
lighthouse: node_modules build ## Lighthouse (mobile) on the console's main pages; writes the figures into docs/console.md "Lighthouse"
	LIGHTHOUSE=1 LIGHTHOUSE_RUNS=$(LIGHTHOUSE_RUNS) go test -count=1 -tags e2e -timeout 30m -run '^TestLighthouse$$' -v ./e2e

bench: node_modules build bench-init ## measure the worker in workerd (TINYGO=0: the standard-Go build); writes bench-results/latest.json, retention1m.json, rows.json, capture_scaling.json and init.json
	REDRIVE_BENCH=1 go test -count=1 -tags e2e -run '^(TestBench.*|TestRowsBench)$$' -timeout 90m -v ./e2e

# Both builds side by side in V8 (Node): wasm size raw and gzipped, time and
# CPU from a new isolate to main() ready, per-call overhead (bench/init/init.mjs).
# Builds each into build/ in turn, then leaves build/ as TINYGO says.
bench-init: ## start-up cost per new isolate and wasm size of the standard-Go and TinyGo builds: bench-results/init.json
	@mkdir -p bench-results
	$(MAKE) --no-print-directory build/app.wasm TINYGO=0
	rm -rf bench-results/wasm-go && mkdir -p bench-results/wasm-go && cp build/app.wasm build/wasm_exec.js bench-results/wasm-go/
	$(MAKE) --no-print-directory build/app.wasm TINYGO=1
	rm -rf bench-results/wasm-tinygo && mkdir -p bench-results/wasm-tinygo && cp build/app.wasm build/wasm_exec.js bench-results/wasm-tinygo/
	$(MAKE) --no-print-directory build TINYGO=$(TINYGO)
	node bench/init/init.mjs go=bench-results/wasm-go tinygo=bench-results/wasm-tinygo | tee bench-results/init.json

# A new instance's first answer and the per-call overhead in workerd itself
# (no wrangler): build/ beside the original worker (bench/reference), each in
# a fresh workerd process per round (bench/init/workerd.mjs).
bench-workerd: node_modules build ## first answer of a new instance and per-call time in workerd, redrive vs the original: bench-results/workerd.json
	@mkdir -p bench-results
	node bench/init/workerd.mjs | tee bench-results/workerd.json

bench-retention: node_modules build ## only the retention figure at 1,000,000 expired rows (bench-results/retention1m.json)
	REDRIVE_BENCH=1 go test -count=1 -tags e2e -run '^TestBenchRetention1M$$' -timeout 45m -v ./e2e

bench-scale: node_modules build ## only capture scaling: 1, 2 and 4 pipelines each on its own local D1 against all on one, and bytes per row (bench-results/capture_scaling.json)
	REDRIVE_BENCH=1 go test -count=1 -tags e2e -run '^TestBenchCaptureScaling$$' -timeout 45m -v ./e2e

bench-rows: node_modules build ## only D1 rows read/written per operation at 100k and 1M rows (bench-results/rows.json)
	REDRIVE_BENCH=1 go test -count=1 -tags e2e -run '^TestRowsBench$$' -timeout 30m -v ./e2e

# Mutation testing with gremlins (pinned): every covered mutant of the Go
# code must make some test fail. It reports each mutant KILLED or LIVED and
# the efficacy (killed / (killed + lived)); about 10-20 min per package on
# 2 cores. SQL strings are not mutated: their conditions are pinned by tests.
# Each mutant's time limit is the coverage run's time times the coefficient;
# GOFLAGS=-count=1 keeps that run out of the test cache (a cached 0.2 s run
# made every mutant of a package time out). --tags mutation makes
# the property tests of dlq/resolve and dlq/relocation run 30 sequences instead
# of 200 (their mutation_test.go).
GREMLINS := GOFLAGS="-count=1 -vet=off" go run github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
MUTATE_PKGS ?= ./dlq ./dlq/inspect ./dlq/resolve ./dlq/upkeep ./dlq/relocation ./dlq/incidents ./alerts ./enrichment ./handlers
mutate: ## mutation testing of dlq and its rooms, alerts, enrichment, handlers (MUTATE_PKGS=./dlq for one)
	@for p in $(MUTATE_PKGS); do echo "== $$p"; $(GREMLINS) unleash --tags mutation --invert-logical --timeout-coefficient 5 $$p || exit 1; done

deploy: node_modules build ## deploy to Cloudflare (needs wrangler login)
	go run ./cmd/migrate -remote -wrangler "$(WRANGLER)"
	$(WRANGLER) deploy

clean:
	rm -rf build
