// Package diff computes which artifacts and versions were added, modified or
// removed between a base commit and HEAD of a package repo
// (docs/design.md#change-detection), so that `publish run` lints and
// mirrors only what changed and `publish plan` can say what a pull request
// lists, upgrades and delists.
//
// # Trees, not the worktree
//
// Compute reads commits and trees from the Git object store with go-git and
// never looks at the worktree: uncommitted edits do not count. It diffs the
// packages subtree of the base commit against the one of HEAD, descending
// only into directories whose tree hashes differ (a Merkle tree diff; see
// diffTrees for why not go-git's merkletrie), so the cost grows with the
// size of the change, not with the size of the repo or of its history.
// Merge commits need no special case: base tree against HEAD tree. Finding
// and checking the base walks commits newest first and stops at the
// merge-base (git's paint-down), so it grows with the distance from base to
// HEAD, not with the history.
//
// # Identity
//
// Only files named manifest.yaml below the packages directory whose kind is
// PackageManifest count (the same rule as manifest.Scan). A change is keyed
// by the identity the manifest declares (artifact from metadata.name, version
// from spec.version), parsed from the old and the new blob with
// manifest.Parse; directory names do not matter:
//
//   - a version directory moved with identical content is no change;
//   - the same identity with different bytes is "modified" (OldPath set);
//   - a changed metadata.name (or spec.version) is "removed" old + "added" new;
//   - a manifest.yaml that does not parse at HEAD is listed in
//     Result.Invalid (lint reports why) and never dropped silently;
//   - any other file (README, other kinds, files outside the packages
//     directory) is no change.
//
// Identities are assumed unique within one tree (lint rule): a version that
// exists twice at base and loses one copy is reported as removed.
//
// # Base resolution
//
// In order: Options.Base (--base, any revision; "flag"); in pull-request mode
// the merge-base of HEAD and the target branch (--target-branch, else
// GITHUB_BASE_REF, else CI_MERGE_REQUEST_DIFF_BASE_SHA used as is ("ci"),
// else CI_MERGE_REQUEST_TARGET_BRANCH_NAME); otherwise the source commit of
// the catalog's state file ("state"). No base at all (first publish) means
// every version counts as changed (Result.All, BaseFrom "none").
//
// A base that cannot be used is never "no changes": when its object is
// missing, when the clone is shallow and the history needed to verify it (or
// to compute the merge-base) is cut off, Compute first fetches from the
// remote "origin" when Options.Fetch allows it (go-git, falling back to the
// git command), and otherwise returns All with a warning naming
// `fetch-depth: 0` (GitHub) and `GIT_DEPTH: 0` (GitLab). A state or CI base
// that is not an ancestor of HEAD (history rewritten by a force push) also
// gives All with a warning; an explicit --base that is not an ancestor is
// compared anyway, with a warning.
package diff
