# hookline: two commands matter.
#   make run   build and serve (embedded PostgreSQL unless DATABASE_URL is set)
#   make test  everything CI checks: generated code, vet, tests with -race

SHELL := /bin/bash
BIN := bin/hookline
SQLC := go tool -modfile=.ci/tools.mod sqlc
TEMPL := go tool templ
# The private cluster the tests start on demand (db/dbtest).
TEST_CLUSTER := $(or $(TMPDIR),/tmp)/hookline-test-$(shell id -u)
VERIFY_DIR := worker/signing/testdata/verify

.PHONY: build run demo test test-generated test-vet test-go test-fuzz skipped generate check-generated bench clean

build:
	go build -o $(BIN) .

# Portal links are built from HOOKLINE_PUBLIC_URL alone: on this machine
# that is the dashboard's own address.
run: build
	addr=$${HOOKLINE_ADDR:-:8080}; HOOKLINE_PUBLIC_URL=$${HOOKLINE_PUBLIC_URL:-http://localhost:$${addr##*:}} ./$(BIN) serve

demo: build
	./$(BIN) demo

generate:
	$(TEMPL) generate -path views
	$(SQLC) generate

# Fails when regenerating would change a committed file.
check-generated:
	.ci/check-generated

# make test runs its steps side by side (make -j, each line of output
# whole): the generated-code check, the build, vet and the API fuzz need
# nothing from the tests, and the tests spend much of their time waiting
# on processes, browsers and the clock rather than on the processor. Each
# step runs to its end whatever the others do (-k); the status is a
# failure if any failed.
test:
	@if [ ! -d $(VERIFY_DIR)/node_modules ] && command -v npm >/dev/null; then \
		npm ci --prefix $(VERIFY_DIR) --no-audit --no-fund --loglevel=error; fi
	@status=0; \
	$(MAKE) --no-print-directory -k -j --output-sync=line build test-generated test-vet test-go test-fuzz || status=$$?; \
	if [ -z "$$TEST_DATABASE_URL" ] && [ -d "$(TEST_CLUSTER)/pg" ]; then \
		HOOKLINE_DATA_DIR=$(TEST_CLUSTER) ./$(BIN) db stop >/dev/null 2>&1 || true; fi; \
	$(MAKE) --no-print-directory skipped; \
	exit $$status

test-generated: check-generated

test-vet:
	go vet ./...

# The packages that take longest are named first, so that go test starts
# them first rather than last (it runs -p packages at once, in the order
# given, as their builds are ready).
TEST_FIRST := ./web/ ./worker/ . ./worker/bench/ ./db/ ./web/demo/
test-go:
	go test -race -count=1 -timeout 25m $(TEST_FIRST) $$(go list ./... | sed 's|^github.com/hookline/hookline|.|' | grep -vxF -e ./web -e ./worker -e . -e ./worker/bench -e ./db -e ./web/demo)

# The API fuzz runs a count of inputs, not a time: with a time, Go 1.26's
# fuzz coordinator can fail the run with "context deadline exceeded" when
# the time runs out while a worker is still busy (golang/go#75804, fixed in
# Go 1.27), which a loaded machine makes likely.
test-fuzz:
	go test -run '^$$' -fuzz '^FuzzAPI$$' -fuzztime 20000x ./web/

# Says loudly which suites the tests skipped for want of a tool (outside CI;
# in CI a missing tool fails them instead).
skipped:
	@missing=(); \
	if [ -z "$$TEST_DATABASE_URL" ] && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null; then \
		missing+=("database tests: no PostgreSQL server (apt-get install postgresql) and no TEST_DATABASE_URL"); fi; \
	if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && [ ! -x /usr/bin/chromium ]; then \
		missing+=("browser tests: no Chromium (apt-get install chromium)"); fi; \
	if ! command -v pgbouncer >/dev/null && [ ! -x /usr/sbin/pgbouncer ]; then \
		missing+=("PgBouncer tests: no pgbouncer (apt-get install pgbouncer)"); fi; \
	if ! command -v tinyproxy >/dev/null && [ ! -x /usr/bin/tinyproxy ]; then \
		missing+=("egress proxy tests: no tinyproxy (apt-get install tinyproxy)"); fi; \
	if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then \
		missing+=("alert rule tests: no promtool or prometheus (apt-get install prometheus)"); fi; \
	if ! command -v node >/dev/null || [ ! -d $(VERIFY_DIR)/node_modules ]; then \
		missing+=("official Standard Webhooks verifier tests: no Node.js or no npm packages (npm ci --prefix $(VERIFY_DIR))"); fi; \
	if (($${#missing[@]})); then \
		echo; echo "*** SKIPPED SUITES: these tests did not run on this machine ***"; \
		for m in "$${missing[@]}"; do echo "***   $$m"; done; echo; fi

bench: build
	./$(BIN) bench

clean:
	rm -rf bin
