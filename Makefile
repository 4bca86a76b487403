# The two commands of the README: `make run` and `make test`.
# Everything they need is fetched or installed by this file and .ci/run.

GO        ?= go
DATA      ?= ./data
BIN       := bin/platform
GEO_PKG   := @ip-location-db/geo-whois-asn-country-mmdb
GEO_VER   := 2.3.2026061719
GEO_DB    := $(DATA)/geo/country.mmdb
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME  ?= 60s

.PHONY: run build test check lint vet fmt-check geodata dashboard sdk testdeps fuzz bench bench-areas clean

## run: build, fetch the country database once, start `platform serve` on embedded defaults
## (a local development setup: app origins and webhooks on this machine are allowed, and
## deployed apps run as your user without a sandbox; production uses --app-sandbox bwrap)
run: build geodata
	$(BIN) serve --data $(DATA) --allow-private-networks --app-sandbox none

## build: the one binary, with the runtime's network poller serving ready connections oldest
## first (build/netpollfifo: a one-line overlay of the toolchain's runtime/netpoll_epoll.go,
## checked against its source; without it, or on another OS, the runtime's own order)
NETPOLL_FLAGS = $(shell $(GO) run ./build/netpollfifo -goroot "$$($(GO) env GOROOT)" -dir bin/_netpollfifo)
build: dashboard
	$(GO) build $(NETPOLL_FLAGS) -o $(BIN) ./cmd/platform

## dashboard: the web dashboard the binary embeds (web/dashboard/README.md): npm ci from the
## lockfile, its TypeScript types from the API's own OpenAPI document (when a Go file changed),
## then tsc and vite build into controlplane/dashboard/site/dist; each step only when its inputs changed
DASH      := web/dashboard
DASH_DEPS := $(DASH)/node_modules/.package-lock.json
DASH_GEN  := $(DASH)/src/api/generated/openapi.json
DASH_OUT  := controlplane/dashboard/site/dist/index.html
dashboard: $(DASH_OUT)

$(DASH_DEPS): $(DASH)/package-lock.json $(DASH)/package.json
	cd $(DASH) && npm ci --no-audit --no-fund

$(DASH_GEN): $(DASH_DEPS) $(shell find controlplane -name '*.go' ! -name '*_test.go' 2>/dev/null)
	cd $(DASH) && GO="$(GO)" npm run --silent gen

$(DASH_OUT): $(DASH_GEN) $(shell find $(DASH)/src $(DASH)/public -type f ! -path '*/generated/*' 2>/dev/null) \
		$(DASH)/index.html $(DASH)/vite.config.ts $(DASH)/tsconfig.json
	cd $(DASH) && npm run --silent check && npm run --silent bundle

## sdk: the TypeScript SDK (sdk/typescript/README.md): npm ci from the lockfile and its types
## from the API's own OpenAPI document (when a Go file changed), as for the dashboard
SDK      := sdk/typescript
SDK_DEPS := $(SDK)/node_modules/.package-lock.json
SDK_GEN  := $(SDK)/src/generated/schema.d.ts
sdk: $(SDK_GEN)

$(SDK_DEPS): $(SDK)/package-lock.json $(SDK)/package.json
	cd $(SDK) && npm ci --no-audit --no-fund

$(SDK_GEN): $(SDK_DEPS) $(shell find controlplane -name '*.go' ! -name '*_test.go' 2>/dev/null)
	cd $(SDK) && GO="$(GO)" npm run --silent gen

## testdeps: npm packages tests load (hls.js for the media playback test; Vite for the CLI's build
## test; the TypeScript SDK, which `go test ./sdk/typescript` builds and runs against a control
## plane), from their lockfiles
HLSJS := controlplane/media/testdata/hlsjs
VITE_SITE := cli/testdata/vite-site
testdeps: $(HLSJS)/node_modules/.package-lock.json $(VITE_SITE)/node_modules/.package-lock.json sdk
$(HLSJS)/node_modules/.package-lock.json: $(HLSJS)/package-lock.json $(HLSJS)/package.json
	cd $(HLSJS) && npm ci --no-audit --no-fund
# the Vite site the CLI test deploys: npm's cache of its packages, which the
# test hands to the platform's build so npm ci runs there without network
$(VITE_SITE)/node_modules/.package-lock.json: $(VITE_SITE)/package-lock.json $(VITE_SITE)/package.json
	cd $(VITE_SITE) && npm ci --no-audit --no-fund --cache .npm-cache

## test: formatting, vet, staticcheck, then every test with the race detector (the dashboard's in
## Chromium among them), then the control plane's tests again with PostgreSQL as the store (Debian
## `postgresql`; without it that pass skips)
test: geodata dashboard testdeps fmt-check vet lint
	PLATFORM_GEOIP=$(abspath $(GEO_DB)) $(GO) test -race -shuffle=on -timeout 15m ./...
	PLATFORM_TEST_STORE=postgres $(GO) test -race -shuffle=on -timeout 15m ./controlplane/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint:
	$(GO) run $(STATICCHECK) ./...

## geodata: the CC-BY-4.0 country database (no account or licence key), fetched once with npm
geodata: $(GEO_DB)

$(GEO_DB):
	@mkdir -p $(dir $(GEO_DB))
	@tmp=$$(mktemp -d) && cd $$tmp && \
	  npm pack --silent $(GEO_PKG)@$(GEO_VER) >/dev/null && \
	  tar xzf *.tgz && \
	  cp package/geo-whois-asn-country.mmdb $(abspath $(GEO_DB)).tmp && \
	  mv $(abspath $(GEO_DB)).tmp $(abspath $(GEO_DB)) && \
	  rm -rf $$tmp
	@echo "country database: $(GEO_DB) ($(GEO_PKG)@$(GEO_VER), CC BY 4.0)"

## fuzz: run every native fuzz target for FUZZTIME each
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 3s $$pkg || exit 1; \
	  done; \
	done

## bench: the edge against nginx, Varnish and Caddy under load, side by side, then the areas
## against their peers (bench/README.md); installs what is missing; QUICK=1 for a smoke run
bench:
	BENCH_COMMAND="make bench" GO="$(GO)" bash bench/run.sh
	GO="$(GO)" PLATFORM_BIN=bin/platform bash bench/peers.sh
	GO="$(GO)" PLATFORM_BIN=bin/platform bash bench/build.sh

## bench-areas: vector search, the AI gateway, databases, functions, media and background jobs
## against hnswlib/FAISS, Portkey, D1 under miniflare, workerd, ffmpeg by hand and River
## (bench/peers.sh; ONLY=...; bench/jobs.sh)
bench-areas:
	GO="$(GO)" bash bench/peers.sh
	GO="$(GO)" bash bench/jobs.sh

## bench-jobs: background jobs against River (Go) on the same SQLite and PostgreSQL, with a
## SIGKILL crash check (bench/jobs.sh; QUICK=1 for a smoke run)
.PHONY: bench-jobs
bench-jobs:
	GO="$(GO)" bash bench/jobs.sh

## bench-build: the edge's p99 on a cached page while a project builds on the same core, against
## idle (bench/build.sh; QUICK=1 for a smoke run)
.PHONY: bench-build
bench-build:
	GO="$(GO)" bash bench/build.sh

## bench-go: the Go benchmarks beside the code
.PHONY: bench-go
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin controlplane/dashboard/site/dist $(DASH)/src/api/generated $(SDK)/src/generated $(SDK)/dist
