package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/operator-publish/publish/internal/manifest"
)

// lintPaths checks the PATHs given to `publish lint` against what the scan
// of the packages directory root found (files and the scan errors, which
// name the manifest paths they are about) and returns them relative to
// source, slash-separated, for Selected. A PATH is absolute or relative to
// source. Each problem is a *PathError (a usage error, exit 2): a PATH
// outside --source, one that does not exist, a file that is not a
// manifest.yaml read by the scan, a directory holding none. With no PATH,
// a scan that found no manifest at all is one too: a lint that read
// nothing must not pass.
func lintPaths(source, packagesDir, root string, paths []string, files []manifest.File, scanErr error) ([]string, error) {
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Path] = true
	}
	for _, e := range splitErrs(scanErr) {
		var me *manifest.Error
		if errors.As(e, &me) {
			seen[me.Path] = true
		}
	}
	if len(paths) == 0 {
		if len(seen) == 0 {
			return nil, &PathError{Path: filepath.ToSlash(filepath.Clean(packagesDir)), Reason: fmt.Sprintf("no %s below it (--packages-dir, relative to --source %s): nothing to lint", manifest.FileName, source)}
		}
		return nil, nil
	}
	absSource, err := realPath(source)
	if err != nil {
		return nil, &PathError{Path: source, Reason: "--source: " + err.Error()}
	}
	absRoot, _ := realPath(root)
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, abs, st, err := sourcePath(source, absSource, p, "lint checks the package repo; give files or directories below it (relative to --source, or absolute)")
		if err != nil {
			return nil, err
		}
		selected := false
		for s := range seen {
			if Selected(s, []string{rel}) {
				selected = true
				break
			}
		}
		if !selected {
			reason := ""
			inPackages := absRoot != "" && (abs == absRoot || strings.HasPrefix(abs, absRoot+string(filepath.Separator)))
			switch {
			case st.IsDir() && !inPackages && !strings.HasPrefix(absRoot, abs+string(filepath.Separator)):
				reason = fmt.Sprintf("not below --packages-dir %s: lint reads the manifests there", packagesDir)
			case st.IsDir():
				reason = fmt.Sprintf("no %s below it: nothing to lint", manifest.FileName)
			case filepath.Base(abs) != manifest.FileName:
				reason = fmt.Sprintf("not a manifest: lint PATH names %s files or the directories holding them", manifest.FileName)
			case !inPackages:
				reason = fmt.Sprintf("not below --packages-dir %s: lint reads the manifests there", packagesDir)
			default:
				reason = "not a PackageManifest (its kind is another): lint reads the files whose kind is PackageManifest"
			}
			return nil, &PathError{Path: p, Reason: reason}
		}
		out = append(out, rel)
	}
	return out, nil
}

// realPath is p absolute with symbolic links resolved (as far as it
// exists), so that a PATH and --source compare whatever way they are
// spelled.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	// Resolve the longest existing parent; the rest does not exist.
	dir, rest := abs, ""
	for {
		parent := filepath.Dir(dir)
		rest = filepath.Join(filepath.Base(dir), rest)
		if parent == dir {
			return abs, nil
		}
		dir = parent
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
	}
}
