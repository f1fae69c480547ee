package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// FileName is the name of a PackageManifest file in a package repo.
const FileName = "manifest.yaml"

// Scan finds every file named manifest.yaml below root whose kind is
// PackageManifest (other kinds are skipped) and parses it with Parse.
// Paths in the result and in errors are relative to base (usually the package
// repo root) so that they match what a user sees in the repo; base "" keeps
// them as found.
//
// It reads every file even when some fail: the result holds the manifests
// that parsed, sorted by artifact then version, and the error joins one
// *Error per bad file. A missing root is an error naming the directory.
func Scan(base, root string) ([]*PackageManifest, error) {
	_, ms, err := ScanFiles(base, root)
	return ms, err
}

// ScanFiles is Scan that also returns the raw files it read (those
// ReadFiles returns), sorted by path: one walk, one read per file.
func ScanFiles(base, root string) ([]File, []*PackageManifest, error) {
	jobs, errs, err := walk(base, root)
	if err != nil {
		return nil, nil, err
	}
	// Parsing dominates a large repo: parse on every core.
	results := make([]*PackageManifest, len(jobs))
	perr := make([]error, len(jobs))
	ours := make([]bool, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ours[i] = isPackageManifest(jobs[i].Data); ours[i] {
					results[i], perr[i] = Parse(jobs[i].Path, jobs[i].Data)
				}
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	var files []File
	var out []*PackageManifest
	for i := range jobs {
		if !ours[i] {
			continue
		}
		files = append(files, jobs[i])
		if perr[i] != nil {
			errs = append(errs, perr[i])
		} else {
			out = append(out, results[i])
		}
	}
	Sort(out)
	return files, out, errors.Join(errs...)
}

// walk reads every regular file named manifest.yaml below root (paths
// relative to base, slash-separated), sorted by path. Misnamed files and
// symbolic links are reported in errs; a missing root is err.
func walk(base, root string) (files []File, errs []error, err error) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("packages directory %s not found: pass --packages-dir relative to --source (default: packages)", root)
	}
	relOf := func(p string) string {
		if base != "" {
			if r, err := filepath.Rel(base, p); err == nil {
				return filepath.ToSlash(r)
			}
		}
		return p
	}
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
		if d.Type()&fs.ModeSymlink != 0 {
			if strings.EqualFold(d.Name(), FileName) || !strings.Contains(d.Name(), ".") {
				errs = append(errs, &Error{Path: relOf(p), Msg: "a symbolic link: publish does not follow links in the package repo (one could point outside it); commit the file or directory itself"})
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if d.Name() != FileName {
			if lower := strings.ToLower(d.Name()); lower == "manifest.yml" || lower == FileName {
				errs = append(errs, &Error{Path: relOf(p), Msg: "only files named exactly manifest.yaml are read: rename it, or this version is not published (and delisted if it was)"})
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, &Error{Path: relOf(p), Msg: err.Error()})
			return nil
		}
		files = append(files, File{Path: relOf(p), Data: data})
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, errs, nil
}

// Sort orders manifests by artifact, then semver, then path.
func Sort(ms []*PackageManifest) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Artifact != b.Artifact {
			return a.Artifact < b.Artifact
		}
		if c := a.Version.Compare(b.Version); c != 0 {
			return c < 0
		}
		return a.Path < b.Path
	})
}

// isPackageManifest reports whether data looks like a PackageManifest: its
// kind is PackageManifest, or it does not parse as a YAML mapping with a kind
// at all (then Parse reports why). Other kinds are not ours and are skipped.
func isPackageManifest(data []byte) bool {
	// Fast path: a top-level "kind: X" line decides without a YAML parse.
	for _, line := range bytes.Split(data, []byte("\n")) {
		if k, ok := bytes.CutPrefix(line, []byte("kind:")); ok {
			v := strings.Trim(strings.TrimSpace(string(bytes.TrimSuffix(k, []byte("\r")))), `"'`)
			if v != "" && !strings.ContainsAny(v, "#{[&*!|>") {
				return strings.EqualFold(v, Kind)
			}
			break
		}
	}
	var peek struct {
		Kind string `yaml:"kind"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&peek); err != nil {
		return true
	}
	// A kind spelled in another case is a typo of ours: Parse reports it
	// rather than the version silently disappearing.
	return peek.Kind == "" || strings.EqualFold(peek.Kind, Kind)
}
