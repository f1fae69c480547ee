#!/usr/bin/env bash
# Refuses a release whose Git tag is not the version action.yml runs: the
# action of tag vX.Y.Z must pull ghcr.io/operator-publish/publish:vX.Y.Z, the
# image this release pushes and signs (docs/ci.md).
#
# Usage: .github/scripts/check-release-tag.sh TAG [ACTION_YML]
# Exit 0 when action.yml's runs.image is docker://ghcr.io/operator-publish/publish:TAG;
# 1 (with a GitHub error annotation naming action.yml's line) when not; 2 on
# a usage error. Tested by internal/ci TestCheckReleaseTag.
set -euo pipefail

tag="${1:-}"
action="${2:-action.yml}"
if [ -z "$tag" ] || [ ! -f "$action" ]; then
  echo "usage: check-release-tag.sh TAG [ACTION_YML] (got tag '$tag', file '$action')" >&2
  exit 2
fi
want="docker://ghcr.io/operator-publish/publish:$tag"
# The runs.image line: two spaces, image:, the value (quotes optional).
line="$(grep -n -E '^  image:' "$action" | head -1 || true)"
lineno="${line%%:*}"
got="$(printf '%s' "${line#*:}" | sed -E 's/^[[:space:]]*image:[[:space:]]*//; s/^["'\'']//; s/["'\'']?[[:space:]]*$//')"
if [ "$got" != "$want" ]; then
  echo "::error file=$action,line=${lineno:-1}::runs.image is '$got', but this release is $tag: set it to $want (and internal/ci ReleaseVersion to $tag), commit, and tag that commit"
  exit 1
fi
echo "$action runs $want: matches the tag"
