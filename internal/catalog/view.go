// Package catalog reads and writes the catalog repo: one View of the
// catalog with two back ends (Dir, a full read of a checked-out directory,
// and Tip, a read of the Git objects of the branch tip), a commit written
// from Git objects without a working tree (WriteCommit), and a push whose
// cost grows with the change, not with the repo (PushCommit). See
// docs/design.md, "The catalog".
package catalog

import (
	"fmt"
)

// View reads the catalog: the files below the catalog root (--catalog-path
// when there is one) of one commit. Paths are slash-separated and relative
// to the catalog root.
//
// Two back ends implement it. Tip (OpenTip) reads the Git objects of the
// branch tip, without checking anything out: the incremental `plan` and
// `run` use it, reading only the files the change needs. Dir (OpenDir)
// reads a checked-out directory: the full read, for a first publish, a
// changed overlay or render configuration, or whatever else the caller
// decides needs every file (it says so with *FullReadRequiredError).
type View interface {
	// Head is the commit the view shows, "" when the branch has no commits
	// yet (an empty repo, a new branch, or a directory outside Git).
	Head() string
	// ReadFile returns the content of the file at p and whether it exists
	// (a directory does not, nor does a symbolic link: as Files, no link
	// is read or followed).
	ReadFile(p string) ([]byte, bool, error)
	// Files returns every regular file below dir ("" for the whole
	// catalog) that skip does not reject, keyed by catalog-relative path.
	// skip (nil: keep all) is called with directories too (isDir true),
	// and rejecting one prunes it. A missing dir is an empty map.
	Files(dir string, skip func(p string, isDir bool) bool) (map[string][]byte, error)
	// Close releases what the view holds (a temporary clone).
	Close() error
}

// FullReadRequiredError says that the incremental path (a Tip view and the
// changed files only) does not apply and the catalog must be read whole
// (Dir): Reason says why, for the log ("the catalog has no state file
// yet", "the overlays changed since the last publish"). The conditions
// that raise it belong to the caller; this package only carries the type.
// Callers test for it with errors.As.
type FullReadRequiredError struct {
	Reason string
}

func (e *FullReadRequiredError) Error() string {
	return "the catalog must be read whole: " + e.Reason
}

// FullReadRequired returns a *FullReadRequiredError with the formatted
// reason.
func FullReadRequired(format string, args ...any) error {
	return &FullReadRequiredError{Reason: fmt.Sprintf(format, args...)}
}
