// Package diffbench generates large package repos for benchmarking
// internal/diff: Artifacts × Versions PackageManifests added over Commits
// commits, the last of which edits one version in place.
//
// Generation is fast because it never goes through a worktree or loose
// objects: trees and commits are encoded directly, written into one
// packfile (the packages tree as a delta of the previous one, a full copy
// every 50, like git's default depth), and indexed by go-git's packfile
// writer. Generated repos are cached under os.TempDir() by parameters.
package diffbench

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// genVersion changes when the generated content changes (cache key).
const genVersion = 1

// maxDeltaDepth bounds delta chains of the packages tree, as git's
// pack.depth default does.
const maxDeltaDepth = 50

// Params sizes a generated repo.
type Params struct {
	Artifacts, Versions, Commits int
}

func (p Params) String() string {
	return fmt.Sprintf("artifacts=%d,versions=%d,commits=%d", p.Artifacts, p.Versions, p.Commits)
}

// Repo is a generated repo: a worktree directory with an empty worktree
// (HEAD is refs/heads/main) and the commit hashes, oldest first.
type Repo struct {
	Dir     string
	Commits []string
}

// Head is the last commit.
func (r *Repo) Head() string { return r.Commits[len(r.Commits)-1] }

// Back returns the commit n commits before HEAD (first-parent history).
func (r *Repo) Back(n int) string { return r.Commits[len(r.Commits)-1-n] }

// Changed is the version the last commit edits in place.
func (p Params) Changed() (artifact, version string) {
	return artifactName(p.Artifacts / 2), versionName(0)
}

func artifactName(i int) string { return fmt.Sprintf("operator-%04d", i) }
func versionName(v int) string  { return fmt.Sprintf("1.%d.0", v) }

// Cached returns the repo for p, generating it under os.TempDir() the first
// time. Concurrent callers (other processes) may both generate; the first
// rename wins.
func Cached(p Params) (*Repo, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("publish-diff-bench-g%d-a%d-v%d-c%d", genVersion, p.Artifacts, p.Versions, p.Commits))
	if r, err := load(dir); err == nil {
		return r, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "publish-diff-bench-tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if _, err := Generate(tmp, p); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if r, lerr := load(dir); lerr == nil {
			return r, nil
		}
		return nil, err
	}
	return load(dir)
}

const commitsFile = "commits.txt" // inside .git: never part of a tree

func load(dir string) (*Repo, error) {
	data, err := os.ReadFile(filepath.Join(dir, ".git", commitsFile))
	if err != nil {
		return nil, err
	}
	commits := strings.Fields(string(data))
	if len(commits) == 0 {
		return nil, errors.New("no commits recorded")
	}
	return &Repo{Dir: dir, Commits: commits}, nil
}

// Generate writes a repo for p into dir (which must be empty or absent).
func Generate(dir string, p Params) (*Repo, error) {
	if p.Artifacts < 1 || p.Versions < 1 || p.Commits < 2 {
		return nil, fmt.Errorf("bad params %s", p)
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return nil, err
	}
	g := newGenerator(p)
	commits := g.run()
	pw, ok := repo.Storer.(storer.PackfileWriter)
	if !ok {
		return nil, errors.New("storage cannot write packfiles")
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return nil, err
	}
	if err := g.pack.finish(w); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("indexing the generated pack: %w", err)
	}
	head := commits[len(commits)-1]
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", head)); err != nil {
		return nil, err
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, c := range commits {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", commitsFile), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return load(dir)
}

// generator builds the history in memory, writing objects to pack.
type generator struct {
	p    Params
	pack *packWriter

	readme plumbing.Hash
	// versions[a][v] is the hash of the version tree (zero: not added yet)
	versions [][]plumbing.Hash
	// packages tree entries: artifact name -> artifact tree hash
	names []string
	trees map[string]plumbing.Hash

	prevPackages      []byte
	prevPackagesHash  plumbing.Hash
	packagesChainSize int
}

func newGenerator(p Params) *generator {
	g := &generator{p: p, pack: newPackWriter(), trees: map[string]plumbing.Hash{}}
	g.versions = make([][]plumbing.Hash, p.Artifacts)
	for i := range g.versions {
		g.versions[i] = make([]plumbing.Hash, p.Versions)
	}
	g.readme = g.pack.object(plumbing.BlobObject, []byte("# Operator packages\n\nOne directory per artifact, one per version.\n"))
	return g
}

type step struct{ a, v int }

// run writes every commit and returns their hashes, oldest first. Commits
// 0..C-2 add the A×V versions (version-major, spread evenly; when there are
// more commits than versions the rest edit versions in place); commit C-1
// edits one version in place.
func (g *generator) run() []plumbing.Hash {
	p := g.p
	total := p.Artifacts * p.Versions
	adds := make([]step, 0, total)
	for v := 0; v < p.Versions; v++ {
		for a := 0; a < p.Artifacts; a++ {
			adds = append(adds, step{a, v})
		}
	}
	n := p.Commits - 1
	var commits []plumbing.Hash
	var parent plumbing.Hash
	next := 0
	for i := 0; i < n; i++ {
		end := (i + 1) * total / n
		if end == 0 && next == 0 {
			end = 1
		}
		msg := ""
		if end <= next {
			// More commits than versions: edit one already added.
			s := adds[(i*7919)%next]
			g.setVersion(s.a, s.v, fmt.Sprintf("revision %d", i))
			msg = fmt.Sprintf("Edit %s %s", artifactName(s.a), versionName(s.v))
		}
		for ; next < end; next++ {
			s := adds[next]
			g.setVersion(s.a, s.v, "")
			if msg != "" {
				msg += ", "
			} else {
				msg = "Add "
			}
			msg += artifactName(s.a) + " " + versionName(s.v)
		}
		parent = g.commit(parent, i, msg)
		commits = append(commits, parent)
	}
	a, v := p.Changed()
	g.setVersion(p.Artifacts/2, 0, "edited in place by the last commit")
	parent = g.commit(parent, n, fmt.Sprintf("Edit %s %s", a, v))
	return append(commits, parent)
}

// setVersion writes the manifest of artifact a version v and the trees
// above it up to the artifact tree.
func (g *generator) setVersion(a, v int, note string) {
	blob := g.pack.object(plumbing.BlobObject, []byte(manifestYAML(artifactName(a), versionName(v), note)))
	vt := encodeTree([]treeEntry{{name: "manifest.yaml", mode: "100644", hash: blob}})
	g.versions[a][v] = g.pack.object(plumbing.TreeObject, vt)
	var entries []treeEntry
	for i, h := range g.versions[a] {
		if !h.IsZero() {
			entries = append(entries, treeEntry{name: versionName(i), mode: "40000", hash: h})
		}
	}
	sortEntries(entries)
	name := artifactName(a)
	if _, ok := g.trees[name]; !ok {
		i := sort.SearchStrings(g.names, name)
		g.names = append(g.names, "")
		copy(g.names[i+1:], g.names[i:])
		g.names[i] = name
	}
	g.trees[name] = g.pack.object(plumbing.TreeObject, encodeTree(entries))
}

// commit writes the packages tree (a delta of the previous one), the root
// tree and the commit.
func (g *generator) commit(parent plumbing.Hash, i int, msg string) plumbing.Hash {
	entries := make([]treeEntry, len(g.names))
	for j, n := range g.names {
		entries[j] = treeEntry{name: n, mode: "40000", hash: g.trees[n]}
	}
	data := encodeTree(entries)
	var pkgs plumbing.Hash
	if g.prevPackages != nil && g.packagesChainSize < maxDeltaDepth {
		pkgs = g.pack.delta(plumbing.TreeObject, data, g.prevPackagesHash, g.prevPackages)
		g.packagesChainSize++
	} else {
		pkgs = g.pack.object(plumbing.TreeObject, data)
		g.packagesChainSize = 0
	}
	g.prevPackages, g.prevPackagesHash = data, pkgs
	root := g.pack.object(plumbing.TreeObject, encodeTree([]treeEntry{
		{name: "README.md", mode: "100644", hash: g.readme},
		{name: "packages", mode: "40000", hash: pkgs},
	}))
	when := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Unix()
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", root)
	if !parent.IsZero() {
		fmt.Fprintf(&b, "parent %s\n", parent)
	}
	fmt.Fprintf(&b, "author Bench <bench@example.com> %d +0000\ncommitter Bench <bench@example.com> %d +0000\n\n%s\n", when, when, msg)
	return g.pack.object(plumbing.CommitObject, b.Bytes())
}

type treeEntry struct {
	name, mode string
	hash       plumbing.Hash
}

// sortEntries orders entries as git does: directories compare as name + "/".
func sortEntries(es []treeEntry) {
	key := func(e treeEntry) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(es, func(i, j int) bool { return key(es[i]) < key(es[j]) })
}

func encodeTree(es []treeEntry) []byte {
	var b bytes.Buffer
	for _, e := range es {
		b.WriteString(e.mode)
		b.WriteByte(' ')
		b.WriteString(e.name)
		b.WriteByte(0)
		b.Write(e.hash[:])
	}
	return b.Bytes()
}

// manifestYAML is a small realistic PackageManifest.
func manifestYAML(artifact, version, note string) string {
	desc := fmt.Sprintf("%s manages its operand on Kubernetes: install, upgrade, backup and restore.", artifact)
	if note != "" {
		desc += " " + note + "."
	}
	return fmt.Sprintf(`apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: %[1]s.v%[2]s
spec:
  type: bundle
  artifact: registry.example.com/operators/%[1]s-bundle:v%[2]s
  version: v%[2]s
  arch:
  - linux/amd64
  - linux/arm64
  info:
    displayName: %[1]s
    description: %[3]q
    keywords: [database, operator]
    links:
    - name: Documentation
      url: https://docs.example.com/%[1]s
    - name: Source
      url: https://git.example.com/operators/%[1]s
  relatedImages:
  - registry.example.com/operators/%[1]s-controller:v%[2]s
  - registry.example.com/operators/%[1]s-operand:v%[2]s
  - registry.example.com/library/kube-rbac-proxy:v0.18.0
`, artifact, version, desc)
}

// packWriter accumulates packfile entries in memory.
type packWriter struct {
	buf   bytes.Buffer
	count uint32
	zw    *zlib.Writer
}

func newPackWriter() *packWriter {
	p := &packWriter{}
	p.zw, _ = zlib.NewWriterLevel(&p.buf, zlib.BestSpeed)
	return p
}

func (p *packWriter) header(typ plumbing.ObjectType, size int) {
	b := byte(typ)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		p.buf.WriteByte(b | 0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	p.buf.WriteByte(b)
}

func (p *packWriter) deflate(data []byte) {
	p.zw.Reset(&p.buf)
	p.zw.Write(data)
	p.zw.Close()
}

// object writes a whole object and returns its hash.
func (p *packWriter) object(t plumbing.ObjectType, data []byte) plumbing.Hash {
	p.header(t, len(data))
	p.deflate(data)
	p.count++
	return plumbing.ComputeHash(t, data)
}

// delta writes data as a REF_DELTA against base and returns its hash.
func (p *packWriter) delta(t plumbing.ObjectType, data []byte, baseHash plumbing.Hash, base []byte) plumbing.Hash {
	d := packfile.DiffDelta(base, data)
	p.header(plumbing.REFDeltaObject, len(d))
	p.buf.Write(baseHash[:])
	p.deflate(d)
	p.count++
	return plumbing.ComputeHash(t, data)
}

// finish writes the pack: header, entries, SHA-1 trailer.
func (p *packWriter) finish(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	h := sha1.New()
	mw := io.MultiWriter(bw, h)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], p.count)
	if _, err := mw.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := mw.Write(p.buf.Bytes()); err != nil {
		return err
	}
	if _, err := bw.Write(h.Sum(nil)); err != nil {
		return err
	}
	return bw.Flush()
}
