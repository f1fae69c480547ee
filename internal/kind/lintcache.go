package kind

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/lint"
)

// lintCacheFormat changes whenever what an entry holds changes, so that
// entries of an older format are never read.
const lintCacheFormat = "publish-lint-cache/v1"

// LintCache is a directory of the lint results of bundles, keyed by what
// they depend on: the bundle image's digest, the manifest file it was
// linted for (its bytes: the findings point at its lines), the lint
// configuration, and the publish binary (its module version and VCS
// revision, or the hash of the executable when it was built without them),
// so that a change of any of them, rules included, makes a new key. An
// entry holds the bundle rules' findings (lint.BundleRules) and the slim
// bundle (bundle.Slim) the later rules and stages read: a bundle whose
// entry is there is neither pulled nor parsed again, only its digest
// asked of the registry (one HEAD, none when spec.artifact is pinned by
// digest). Entries are JSON files written atomically (a temporary file
// renamed), so concurrent commands sharing a directory never read half an
// entry; nothing is ever evicted (delete the directory to empty it).
type LintCache struct {
	dir  string
	salt string
}

// OpenLintCache opens (creating it) the cache directory dir for lint
// configuration cfg. Errors: the directory cannot be created or written
// (the message names it).
func OpenLintCache(dir string, cfg lint.Config) (*LintCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lint cache %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("lint cache %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if binaryFingerprint() == "" {
		return nil, fmt.Errorf("lint cache %s: the publish executable cannot be read to know its rules; run without a lint cache", dir)
	}
	conf, err := json.Marshal(struct {
		Cfg   lint.Config
		Lines map[string]int
		File  string
	}{cfg, cfg.Lines, cfg.File})
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", lintCacheFormat, binaryFingerprint())
	h.Write(conf)
	return &LintCache{dir: dir, salt: hex.EncodeToString(h.Sum(nil))}, nil
}

// Key is the key of the bundle of digest linted for a manifest whose file
// holds manifest.
func (c *LintCache) Key(manifest []byte, digest string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", c.salt, digest)
	h.Write(manifest)
	return hex.EncodeToString(h.Sum(nil))
}

// lintEntry is one entry of a LintCache.
type lintEntry struct {
	Format   string         `json:"format"`
	Bundle   *bundle.Bundle `json:"bundle"`
	Findings []lint.Finding `json:"findings"`
}

func (c *LintCache) path(key string) string {
	return filepath.Join(c.dir, key[:2], key+".json")
}

// Get returns the entry of key; ok is false when there is none or it
// cannot be read (an unreadable entry is a miss, never an error: it is
// written again).
func (c *LintCache) Get(key string) (b *bundle.Bundle, findings []lint.Finding, ok bool) {
	data, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil, nil, false
	}
	var e lintEntry
	if err := json.Unmarshal(data, &e); err != nil || e.Format != lintCacheFormat || e.Bundle == nil {
		return nil, nil, false
	}
	if e.Findings == nil {
		e.Findings = []lint.Finding{}
	}
	return e.Bundle, e.Findings, true
}

// Put stores the slim bundle b and its findings under key. Errors: the
// entry cannot be written (a full disk): the caller goes on without it.
func (c *LintCache) Put(key string, b *bundle.Bundle, findings []lint.Finding) error {
	data, err := json.Marshal(lintEntry{Format: lintCacheFormat, Bundle: b, Findings: findings})
	if err != nil {
		return err
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".entry-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

var (
	fingerprintOnce sync.Once
	fingerprint     string
)

// binaryFingerprint names the code that lints: the main module's version
// and VCS revision when the binary was built from a clean checkout, else
// the sha256 of the executable.
func binaryFingerprint() string {
	fingerprintOnce.Do(func() {
		if bi, ok := debug.ReadBuildInfo(); ok {
			rev, modified := "", ""
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "false" {
				fingerprint = bi.Main.Path + "@" + bi.Main.Version + "+" + rev
				return
			}
		}
		exe, err := os.Executable()
		if err != nil {
			return
		}
		f, err := os.Open(exe)
		if err != nil {
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			fingerprint = "sha256:" + hex.EncodeToString(h.Sum(nil))
		}
	})
	return fingerprint
}
