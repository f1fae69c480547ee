// Package ci will detect GitHub Actions, GitLab CI and Tekton and speak
// their dialects: inputs, outputs, job summaries, annotations at file:line,
// masked secrets (DESIGN.md §3, PR mode). Not implemented yet; today publish
// reads flags and PUBLISH_* environment variables in every CI system alike.
package ci
