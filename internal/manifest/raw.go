package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// File is the raw content of one manifest file, for the lint rules that
// look at the bytes (encoding, line endings, YAML style) rather than the
// parsed PackageManifest.
type File struct {
	// Path is slash-separated, relative to the package repo (as in Scan).
	Path string
	Data []byte
}

// ReadFiles finds the same files as Scan (every manifest.yaml below root
// whose kind is PackageManifest or that does not parse far enough to tell)
// and returns their content, sorted by path, without parsing them. Paths are
// relative to base and slash-separated as in Scan, so that they equal the
// PackageManifest.Path of the same file. Unreadable files are reported in the joined
// error and left out; a missing root is an error naming the directory.
func ReadFiles(base, root string) ([]File, error) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("packages directory %s not found: pass --packages-dir relative to --source (default: packages)", root)
	}
	var out []File
	var errs []error
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // links and special files are never read (Scan reports them)
		}
		if d.Name() != FileName {
			return nil
		}
		rel := p
		if base != "" {
			if r, err := filepath.Rel(base, p); err == nil {
				rel = filepath.ToSlash(r)
			}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, &Error{Path: rel, Msg: err.Error()})
			return nil
		}
		if isPackageManifest(data) {
			out = append(out, File{Path: rel, Data: data})
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, errors.Join(errs...)
}
