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
# -p 4: four test binaries at once even on 2 cores, since the integration
# tests spend much of their time waiting on the servers they start: with the
# default (-p = cores) a whole run used 1.07 cores on average (1,997 s of CPU
# in 1,857 s, /usr/bin/time, on 2 shared cores).
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -p 4 -timeout 30m ./...

# Unit tests only (no registry, no Git server).
test-short:
	$(GO) test -race -count=1 -short ./...

clean:
	rm -rf bin
