# operator-publish: the two commands of the README, and a few helpers.
GO ?= go
BIN := bin/publish

.PHONY: build demo demo-airgap test vet test-race test-plain test-short lint clean

build:
	$(GO) build -o $(BIN) ./cmd/publish

# README command 1: the whole pipeline on the bundled example operators, with
# in-process registries and local Git repos: needs only Go (and no network).
demo: build
	$(GO) run ./hack/demo -publish $(BIN)

# The air-gapped story on the same example: package (twice, the second time
# from the --cache), verify, stop the source registry, push --catalog.
demo-airgap: build
	$(GO) run ./hack/demo -publish $(BIN) -airgap

# The packages tested with -race: those that start goroutines of their own
# (a go statement, or errgroup's or WaitGroup's Go, in their non-test code),
# those whose types are shared between goroutines (locks, atomics) and those
# whose tests run them concurrently. internal/ci's TestRaceList fails when a
# package with goroutines of its own is missing here. Slowest first: go test
# starts packages in the order given, so that the long ones do not run last,
# alone on one core. Why these: docs/testing.md, "The race detector".
MODULE := github.com/operator-publish/publish
RACE_PKGS := internal/pipeline internal/archive internal/lint internal/mirror \
	internal/testenv internal/verify internal/status internal/registry \
	internal/catalog internal/manifest internal/kind internal/logging internal/forge \
	internal/forge/forgetest internal/olm/olmtest bench/mirror hack/demo \
	cmd/publish
# The slowest of the other packages, started first.
SLOW_PKGS := internal/olm test/e2e internal/gitops internal/ci
# Every other package, computed when a target needs it.
PLAIN_PKGS = $(addprefix $(MODULE)/,$(SLOW_PKGS)) \
	$(filter-out $(addprefix $(MODULE)/,$(RACE_PKGS) $(SLOW_PKGS)),$(shell $(GO) list ./...))

# README command 2: every test; the race detector on RACE_PKGS. The
# integration tests need the Debian packages docker-registry and git
# (apt-get install -y docker-registry apache2-utils git) and ../shared;
# without them they skip, saying so, unless PUBLISH_REQUIRE_INTEGRATION=1 (as
# in .ci/run). The default -p (one test binary per core): -p 4 was tried and
# not kept (docs/testing.md, "How long it takes").
test: vet test-race test-plain

vet:
	$(GO) vet ./...

test-race:
	$(GO) test -race -count=1 -timeout 30m $(addprefix ./,$(RACE_PKGS))

test-plain:
	$(GO) test -count=1 -timeout 30m $(PLAIN_PKGS)

# Unit tests only (no registry, no Git server, no go build, no corpus):
# under -short every integration test skips (testenv.Short). No -race: it
# would make internal/pipeline's unit tests alone take four minutes; make
# test has it.
test-short:
	$(GO) test -count=1 -short ./...

clean:
	rm -rf bin
