#!/usr/bin/env bash
# The largest public catalog through publish: every bundle of a checkout of
# redhat-openshift-ecosystem/community-operators-prod (its operators/ tree)
# built into a bundle image in one Debian docker-registry on a free loopback
# port, related images replaced by small generated stand-ins (as the corpus
# tests do), a package repo written, then `publish lint`, `opm render` of the
# same bundle images, the first `publish run`, `plan` and an incremental `run`
# after one new version, the olm target's first run and `publish package` of
# everything, timed with the peak RSS of each (bench/catalog).
#
#   CHECKOUT=/path/to/community-operators-prod bench/catalog/run.sh
#   OPERATORS=50 bench/catalog/run.sh     # the first 50 operators only
#   LINT_ONLY=3 OPM=... bench/catalog/run.sh  # lint (no cache) and opm render only, 3 turns each
#   LINT_ONLY=1 COMPARE=/path/to/other/publish bench/catalog/run.sh  # fails unless both lint alike
#
# Without CHECKOUT it unpacks the operators/ tree of a bare clone at
# $MIRROR (default: the session tool's mirror of the repository). Needs
# docker-registry (apt-get install -y docker-registry) and git; for the
# comparison an opm binary (OPM=/path/to/opm; hack/opm/build.sh prints one).
# Prints a Markdown table on stdout; the log of each command goes to $work.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'kill "${reg_pid:-}" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
if [ -z "${CHECKOUT:-}" ]; then
  MIRROR=${MIRROR:-/work/.mirror/redhat-openshift-ecosystem+community-operators-prod/repo}
  [ -d "$MIRROR" ] || { echo "no CHECKOUT and no bare clone at $MIRROR" >&2; exit 2; }
  CHECKOUT="$work/checkout"
  mkdir -p "$CHECKOUT"
  git --git-dir="$MIRROR" archive --prefix=operators/ HEAD:operators | tar -x -C "$CHECKOUT"
  git --git-dir="$MIRROR" rev-parse HEAD > "$CHECKOUT/COMMIT"
fi
. bench/registry.sh
start_registry "$work"
go build -o "$work/publish" ./cmd/publish
go run ./bench/catalog -registry "$addr" -checkout "$CHECKOUT" -publish "$work/publish" \
  -opm "${OPM:-}" -operators "${OPERATORS:-0}" -lint-only "${LINT_ONLY:-0}" -compare "${COMPARE:-}" -work "$work/bench"
