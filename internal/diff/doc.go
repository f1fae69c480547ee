// Package diff will compute, tree to tree with go-git, which artifacts and
// versions were added, modified or removed between a base commit and HEAD
// (DESIGN.md §3 step 2), so that `publish run` lints and mirrors only what
// changed. Until it lands, `publish run` treats every version as changed:
// correct, only slower (mirroring skips what the destination already has).
package diff
