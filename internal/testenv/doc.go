// Package testenv starts the real services the integration tests need, on
// free loopback ports, and stops them when the test ends:
//
//   - StartRegistry: the Debian `docker-registry` (distribution 2.8), optionally
//     with TLS (a throw-away CA written to CAFile) and htpasswd basic auth.
//   - StartGitServer: `git http-backend` behind net/http/cgi with basic auth,
//     a real Git smart-HTTP server.
//   - BuildCorpus: bundle images and a package repo from ../shared/corpus.
//
// Tests that need a binary that is not installed are skipped with a message
// naming the Debian package, unless PUBLISH_REQUIRE_INTEGRATION=1 is set (as
// .ci/run does), in which case they fail.
package testenv
