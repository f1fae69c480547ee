#!/usr/bin/env bash
# hack/testnames.sh REV: prints "PACKAGE-DIR TestName" for every top-level
# test, fuzz test and example function in the _test.go files of revision
# REV (default HEAD), sorted, without compiling anything. Comparing two
# revisions' lists (comm -23 before after) shows the tests that are gone or
# moved (docs/testing.md, "Every test still runs").
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-HEAD}"
git grep -E '^func (Test|Fuzz|Example)[A-Za-z0-9_]*\(' "$rev" -- '*_test.go' |
  sed -E 's/^[^:]+:(([^:]*)\/)?[^/:]+:func ([A-Za-z0-9_]+).*/\2 \3/; s/^ /. /' |
  LC_ALL=C sort
