# syntax=docker/dockerfile:1
#
# The publish image: the GitHub Action (action.yml runs the released one, built
# by .github/workflows/release.yml from this file), the GitLab job image and
# the Tekton step image.
#
#   docker build --build-arg VERSION=v1.2.3 -t ghcr.io/operator-publish/publish:v1.2.3 .

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/publish ./cmd/publish

FROM debian:bookworm-slim
# ca-certificates: HTTPS to registries and Git servers.
# git: go-git's file transport runs git-upload-pack/git-receive-pack for a
# catalog given as a local path.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 # The checkout is owned by the CI user, not by the container's: without
 # this, git refuses it ("detected dubious ownership").
 && git config --system --add safe.directory '*' \
 && groupadd --gid 65532 publish \
 && useradd -K UID_MAX=65532 --uid 65532 --gid 65532 --create-home --home-dir /home/publish --shell /usr/sbin/nologin publish
COPY --from=build /out/publish /usr/local/bin/publish
# No USER: GitHub runs Docker actions as the image's user and documents that
# they must run as root, or they cannot write GITHUB_WORKSPACE, GITHUB_OUTPUT
# and GITHUB_STEP_SUMMARY (owned by the runner's user). The non-root user
# publish (65532, the uid of distroless "nonroot" and of Tekton's git-clone
# Task) is here for Kubernetes: set securityContext runAsUser: 65532 (as
# examples/tekton/task.yaml does).
ENTRYPOINT ["/usr/local/bin/publish"]
