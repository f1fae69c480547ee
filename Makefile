# operator-publish: the two commands of the README, and a few helpers.
GO ?= go
BIN := bin/publish

.PHONY: build demo demo-airgap test test-short lint clean

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

# README command 2: every test, with the race detector. The integration tests
# need the Debian packages docker-registry and git (apt-get install -y
# docker-registry apache2-utils git) and ../shared; without them they skip,
# saying so, unless PUBLISH_REQUIRE_INTEGRATION=1 (as in .ci/run).
# The default -p (one test binary per core): -p 4 was tried and not kept
# (docs/testing.md, "How long it takes").
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

# Unit tests only (no registry, no Git server).
test-short:
	$(GO) test -race -count=1 -short ./...

clean:
	rm -rf bin
