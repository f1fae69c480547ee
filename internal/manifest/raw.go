package manifest

import (
	"errors"
	"strings"
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
	files, errs, err := walk(base, root)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, f := range files {
		if isPackageManifest(f.Data) {
			out = append(out, f)
		}
	}
	var readErrs []error
	for _, e := range errs {
		// Misnamed files and links are Scan's to report; ReadFiles reports
		// files it could not read.
		var me *Error
		if errors.As(e, &me) && (strings.Contains(me.Msg, "symbolic link") || strings.Contains(me.Msg, "only files named")) {
			continue
		}
		readErrs = append(readErrs, e)
	}
	return out, errors.Join(readErrs...)
}
