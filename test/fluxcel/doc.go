// Package fluxcel tests the Flux healthCheckExprs of
// catalog-repo-template/flux/kustomization.yaml with Flux's own evaluator
// (github.com/fluxcd/pkg/runtime/cel) against the fixtures the Argo CD Lua
// checks are tested with (internal/status/healthcheck/testdata). It is a
// module of its own so that the main module does not carry Flux's
// dependency tree (controller-runtime, cli-utils, prometheus); run it with
// `cd test/fluxcel && go test ./...` (make test does).
package fluxcel
