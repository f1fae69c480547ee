package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v4"
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
	if err := below(base, root); err != nil {
		return nil, nil, err
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
			if p != root && manifestName(d.Name()) {
				// Not read, this version would silently disappear (and be
				// delisted): say so instead.
				errs = append(errs, notRegular(relOf(p), d.Type()))
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
			if manifestName(d.Name()) {
				errs = append(errs, notRegular(relOf(p), d.Type()))
			}
			return nil
		}
		if d.Name() != FileName {
			if lower := strings.ToLower(d.Name()); lower == "manifest.yml" || lower == FileName {
				errs = append(errs, &Error{Path: relOf(p), Msg: "only files named exactly manifest.yaml are read: rename it, or this version is not published (and delisted if it was)"})
			}
			return nil
		}
		data, err := readCapped(p, relOf(p))
		if err != nil {
			errs = append(errs, err)
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

// MaxFileSize is the largest manifest file publish reads, in bytes (1 MiB):
// a PackageManifest is a few KiB, and what it holds ends up in objects
// that must stay under MaxObjectSize.
const MaxFileSize = 1 << 20

// ErrTooLarge is wrapped by the *Error of a manifest file over MaxFileSize.
var ErrTooLarge = errors.New("file too large")

// readCapped reads the file at p (rel names it in errors) up to
// MaxFileSize: reading stops at the cap, so a huge file costs no memory.
// The file is opened without following a link (walk has checked it is a
// regular file) and only read when it still is one.
func readCapped(p, rel string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, &Error{Path: rel, Msg: err.Error()}
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, &Error{Path: rel, Msg: err.Error()}
	} else if !st.Mode().IsRegular() {
		return nil, notRegular(rel, st.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{Path: rel, Msg: err.Error()}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{Path: rel, Err: ErrTooLarge,
			Msg: fmt.Sprintf("the file is larger than %s, the limit of a manifest file: a PackageManifest is a few KiB; shrink spec.info.icon and spec.info.description (the likely causes)", sizeText(MaxFileSize))}
	}
	return data, nil
}

// sizeText writes n bytes as KiB or MiB when it is a whole number of them.
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// manifestName reports whether name is manifest.yaml in any case, or
// manifest.yml: a name a user means as a manifest.
func manifestName(name string) bool {
	lower := strings.ToLower(name)
	return lower == FileName || lower == "manifest.yml"
}

// ErrNotRegular is wrapped by the *Error of a path named like a manifest
// that is not a regular file (a directory, FIFO, socket or device).
var ErrNotRegular = errors.New("not a regular file")

// notRegular is the error for a path named manifest.yaml that is not a
// regular file: it is never read, so its version would not be published.
func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return &Error{Path: path, Err: ErrNotRegular,
		Msg: what + ", not a regular file: a manifest.yaml must be a file holding one PackageManifest; replace it by the file, or rename it (until then this version cannot be published)"}
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
// kind or apiVersion says so (oursKind: a misspelt kind too), or it does
// not parse as a YAML mapping with a kind at all (then Parse reports
// why). Other kinds are not ours and are skipped.
func isPackageManifest(data []byte) bool {
	// Fast path: a top-level "kind: X" line of ours decides without a YAML
	// parse.
	for _, line := range bytes.Split(data, []byte("\n")) {
		if k, ok := bytes.CutPrefix(line, []byte("kind:")); ok {
			v := strings.Trim(strings.TrimSpace(string(bytes.TrimSuffix(k, []byte("\r")))), `"'`)
			if v != "" && !strings.ContainsAny(v, "#{[&*!|>") && oursKind(v, "") {
				return true
			}
			break
		}
	}
	var peek struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&peek); err != nil {
		return true
	}
	// A kind spelled in another case, or misspelt, is a typo of ours:
	// Parse reports it rather than the version silently disappearing.
	return peek.Kind == "" || oursKind(peek.Kind, peek.APIVersion)
}

// ReadFile reads one manifest file at p (rel, relative to the package
// repo, names it in errors) as Scan does: up to MaxFileSize, a regular
// file only. Errors are *Error.
func ReadFile(p, rel string) ([]byte, error) { return readCapped(p, rel) }

// Suspect reports whether a directory entry named name, of type mode, is
// one that Scan reports instead of reading (a path named like a manifest
// that is not a regular file, a misnamed manifest, a link named like one).
func Suspect(name string, mode fs.FileMode) bool {
	switch {
	case mode&fs.ModeSymlink != 0:
		return strings.EqualFold(name, FileName) || !strings.Contains(name, ".")
	case !mode.IsRegular():
		return manifestName(name)
	}
	return name != FileName && manifestName(name)
}

// below returns an error when the directory root, links resolved, is not
// base or below it: the packages directory (--packages-dir, or packagesDir
// in publish.yaml, which a pull request can change) must stay inside the
// package repo, or a scan would read and publish manifests from anywhere.
// An empty base confines nothing.
func below(base, root string) error {
	if base == "" {
		return nil
	}
	resolve := func(p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		return filepath.EvalSymlinks(abs)
	}
	b, err := resolve(base)
	if err != nil {
		return fmt.Errorf("--source %s: %v", base, err)
	}
	r, err := resolve(root)
	if err != nil {
		return fmt.Errorf("packages directory %s: %v", root, err)
	}
	if rel, err := filepath.Rel(b, r); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("packages directory %s is outside --source %s: --packages-dir (or packagesDir in publish.yaml) names a directory below the package repo", root, base)
	}
	return nil
}
