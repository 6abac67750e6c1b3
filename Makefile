# Gatehouse developer targets. See docs/testing.md for what each one runs,
# what it installs and where.

GO        ?= go
BIN       := bin/gatehouse
# Unit packages: everything except the end-to-end tests, which drive the
# built binary and real servers.
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v '/test/e2e')
E2E_PKGS   = ./test/e2e/...
# Race detector on the unit packages; set RACE= to turn it off.
RACE      ?= -race
FUZZTIME  ?= 10s
BENCH     ?= .
BENCHCOUNT ?= 1

.PHONY: all build demo deps test test-unit test-e2e bench fuzz lint clean

all: lint build test

build:
	$(GO) build -o $(BIN) ./cmd/gatehouse

# Real MCP servers and client from npm into .cache/npm (idempotent).
deps:
	scripts/install-test-deps.sh

demo:
	scripts/demo.sh

# The full suite: unit tests with the race detector, then the end-to-end
# tests against the freshly built binary. Each phase has its own timeout;
# together they stay well under 30 minutes on 2 cores. The end-to-end phase
# runs even when the unit phase failed, so that one failure does not hide
# the other; the target fails if either did.
#
# The audit ledger's PostgreSQL tests need a server: unless
# GATEHOUSE_TEST_POSTGRES already names one, a throwaway PostgreSQL is
# started on 127.0.0.1 (scripts/postgres.sh) and stopped, its data deleted,
# at the end.
test: deps build
	@rc=0; started=0; \
	if [ -z "$${GATEHOUSE_TEST_POSTGRES:-}" ]; then \
		if GATEHOUSE_TEST_POSTGRES="$$(scripts/postgres.sh dsn 2>/dev/null)"; then \
			export GATEHOUSE_TEST_POSTGRES; \
			echo "make test: PostgreSQL already running at $$GATEHOUSE_TEST_POSTGRES"; \
		elif GATEHOUSE_TEST_POSTGRES="$$(scripts/postgres.sh start </dev/null)"; then \
			started=1; export GATEHOUSE_TEST_POSTGRES; \
			echo "make test: PostgreSQL at $$GATEHOUSE_TEST_POSTGRES"; \
		else \
			echo "make test: could not start PostgreSQL; its tests will skip (or fail under CI=true)"; \
			unset GATEHOUSE_TEST_POSTGRES; \
		fi; \
	fi; \
	$(MAKE) --no-print-directory test-unit || rc=1; \
	$(MAKE) --no-print-directory test-e2e || rc=1; \
	if [ $$started = 1 ]; then scripts/postgres.sh stop </dev/null || true; fi; \
	if [ $$rc != 0 ]; then echo "make test: FAILED (see above)"; fi; \
	exit $$rc

test-unit:
	$(GO) test $(RACE) -timeout 12m $(UNIT_PKGS)

# -count=1: these tests depend on processes and npm packages outside Go's
# view, so a cached result could be stale.
test-e2e: build
	GATEHOUSE_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 12m $(E2E_PKGS)

bench: deps build
	GATEHOUSE_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCHCOUNT) -timeout 20m ./...
	GATEHOUSE_BIN=$(CURDIR)/$(BIN) GATEHOUSE_BENCH_CALLS=$${GATEHOUSE_BENCH_CALLS:-200000} $(GO) run ./bench/cmd/gatehouse-bench

# Each Fuzz target for FUZZTIME (default 10s); see scripts/fuzz.sh.
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

lint:
	@out="$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...))"; \
	if [ -n "$$out" ]; then echo "gofmt -l reports unformatted files:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin
