package archive

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/operator-publish/publish/internal/scratch"
)

// PartsIndex is NAME.parts.json, the index of an archive split into parts
// (WriteParts; JSON, schemaVersion 1): the parts in order. Each part is a
// gzip-compressed tar of its own; the first holds oci-layout, index.json,
// digests.json, packages/ and every manifest, the others configs and
// layers. Read in order, they hold the entries of one archive.
type PartsIndex struct {
	SchemaVersion int `json:"schemaVersion"`
	// MaxSize is the size a part was to stay within, in bytes.
	MaxSize int64  `json:"maxSize"`
	Parts   []Part `json:"parts"`
}

// Part is one part of a split archive: its file name (beside the index),
// size in bytes, sha256 (hex) and how many blobs it holds.
type Part struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Blobs  int    `json:"blobs"`
	// Reused: found complete from an interrupted run (not written again).
	Reused bool `json:"-"`
}

// PartsPath is the index of the split archive NAME.tgz: NAME.parts.json.
func PartsPath(archive string) string { return stem(archive) + ".parts.json" }

// PartPath is the file of part n (from 1) of the split archive NAME.tgz:
// NAME.part-0001.tgz; of NAME.tar (Uncompressed): NAME.part-0001.tar.
func PartPath(archive string, n int) string {
	ext := ".tgz"
	if Uncompressed(archive) {
		ext = ".tar"
	}
	return fmt.Sprintf("%s.part-%04d%s", stem(archive), n, ext)
}

// SizeError is a blob larger than a part may be (WriteParts with Strict).
type SizeError struct {
	Blob, Image string
	Size, Max   int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("blob %s of %s is %s, more than a part of %s can hold: raise --max-size, or drop --strict-size to give it a part of its own", e.Blob, e.Image, Size(e.Size), Size(e.Max))
}

// SplitOptions configures WriteParts.
type SplitOptions struct {
	// MaxSize is the largest part, in bytes (the medium's limit).
	MaxSize int64
	// Strict fails on a blob that cannot fit in a part (*SizeError)
	// instead of giving it a part of its own, larger than MaxSize, with a
	// warning.
	Strict bool
}

// tarBytes is what a tar entry of n bytes takes (header and the PAX
// header publish may write, padding).
func tarBytes(n int64) int64 { return 1536 + (n+511)/512*512 }

// gzipBound is the most n bytes of tar take once gzip-compressed (stored
// blocks of incompressible layers, the gzip header and trailer).
func gzipBound(n int64) int64 { return n + n/128 + 2048 }

// fileBound is the most n bytes of tar take in the file: gzipBound, or n
// for an uncompressed archive.
func (pp *prepared) fileBound(n int64) int64 {
	if pp.o.Uncompressed {
		return n
	}
	return gzipBound(n)
}

// planParts puts the blobs into parts of at most max bytes, first fit in
// digest order (deterministic: the same blobs give the same parts); the
// first part starts with head bytes of metadata. A blob that fits in no
// part gets one of its own (a warning), or a *SizeError with strict.
func (pp *prepared) planParts(head int64, so SplitOptions) ([][]string, error) {
	parts := [][]string{nil}
	used := []int64{head + 1024} // with the tar's end
	for _, d := range pp.blobs {
		b := pp.c.blobs[d]
		n := tarBytes(b.desc.Size)
		if pp.fileBound(1024+n) > so.MaxSize {
			if so.Strict {
				return nil, &SizeError{Blob: d, Image: b.from, Size: b.desc.Size, Max: so.MaxSize}
			}
			pp.res.Warnings = append(pp.res.Warnings, fmt.Sprintf("blob %s of %s is %s, more than --max-size %s: it gets a part of its own, larger than the others", d, b.from, Size(b.desc.Size), Size(so.MaxSize)))
			parts, used = append(parts, []string{d}), append(used, so.MaxSize) // full
			continue
		}
		i := 0
		for i < len(parts) && pp.fileBound(used[i]+n) > so.MaxSize {
			i++
		}
		if i == len(parts) {
			parts, used = append(parts, nil), append(used, 1024)
		}
		parts[i] = append(parts[i], d)
		used[i] += n
	}
	return parts, nil
}

// WriteParts is WriteFile for media with a size limit: it writes the
// archive as parts (PartPath: NAME.part-0001.tgz, …) of at most
// so.MaxSize bytes, each with its FILE.sha256, then the index
// NAME.parts.json (PartsPath, with its .sha256) and NAME.digests.json.
// Blobs are not cut: a part ends before the blob that would not fit.
//
// A part already there from an interrupted run with the same content
// planned (every entry, and its .sha256 matching) is kept and not read
// from the registries again (PackageResult.PartsReused); any other is
// rewritten. Each part goes through a temporary file renamed at its end.
func WriteParts(ctx context.Context, path string, so SplitOptions, o PackageOptions) (*PackageResult, error) {
	if so.MaxSize < 64<<10 {
		return nil, fmt.Errorf("a part of %s is too small: give at least 64 KiB", Size(so.MaxSize))
	}
	pp, err := collect(ctx, o)
	if err != nil {
		return nil, err
	}
	head := tarBytes(int64(len(layoutData))) + tarBytes(int64(len(pp.indexJSON))) + tarBytes(int64(len(pp.digestsJSON)))
	for _, f := range append(append([]File(nil), pp.files...), pp.trust...) {
		head += tarBytes(int64(len(f.Data)))
	}
	for _, d := range pp.mans {
		head += tarBytes(int64(len(pp.c.manifests[d])))
	}
	plan, err := pp.planParts(head, so)
	if err != nil {
		return nil, err
	}
	var todo int64
	reuse := make([]*Part, len(plan))
	for i, blobs := range plan {
		if p, ok := pp.reusable(PartPath(path, i+1), i == 0, blobs); ok {
			reuse[i] = p
			continue
		}
		for _, d := range blobs {
			todo += pp.c.blobs[d].desc.Size
		}
	}
	res := pp.res
	o.Progress.Start(todo)
	idx := PartsIndex{SchemaVersion: 1, MaxSize: so.MaxSize}
	for i, blobs := range plan {
		p := reuse[i]
		if p != nil {
			res.PartsReused++
			p.Reused = true
		} else if p, err = pp.writePart(ctx, PartPath(path, i+1), i == 0, blobs); err != nil {
			return nil, err
		}
		idx.Parts = append(idx.Parts, *p)
		res.Bytes += p.Size
	}
	o.Progress.Done()
	pp.done()
	res.Parts = idx.Parts
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err := scratch.WriteFile(PartsPath(path), data, 0o644); err != nil {
		return nil, err
	}
	res.SHA256 = sha256Hex(data)
	if err := writeChecksum(PartsPath(path), res.SHA256); err != nil {
		return nil, err
	}
	if err := scratch.WriteFile(DigestsPath(path), pp.digestsJSON, 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// writePart writes one part through a temporary file, and its .sha256.
func (pp *prepared) writePart(ctx context.Context, path string, head bool, blobs []string) (*Part, error) {
	tmp, err := scratch.Partial(path)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	n, sum, err := pp.write(ctx, bw, head, blobs)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		// A stale .sha256 of an earlier run goes first: a part is taken
		// as complete only with its own.
		os.Remove(ChecksumPath(path))
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = writeChecksum(path, sum)
	}
	if err != nil {
		return nil, err
	}
	return &Part{Name: filepath.Base(path), Size: n, SHA256: sum, Blobs: len(blobs)}, nil
}

// reusable says whether the part at path, left by an earlier run, holds
// exactly what is planned for it (the metadata byte for byte when head,
// then blobs, each matching its digest) and matches its .sha256.
func (pp *prepared) reusable(path string, head bool, blobs []string) (*Part, bool) {
	want, ok, err := readChecksum(path)
	if err != nil || !ok {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var names []string
	var data [][]byte
	if head {
		names, data = []string{LayoutFile, IndexFile, DigestsFile}, [][]byte{[]byte(layoutData), pp.indexJSON, pp.digestsJSON}
		for _, fl := range pp.files {
			names, data = append(names, PackagesDir+fl.Path), append(data, fl.Data)
		}
		for _, fl := range pp.trust {
			names, data = append(names, TrustDir+fl.Path), append(data, fl.Data)
		}
		for _, d := range pp.mans {
			names, data = append(names, BlobsDir+strings.TrimPrefix(d, "sha256:")), append(data, nil)
		}
	}
	for _, d := range blobs {
		names, data = append(names, BlobsDir+strings.TrimPrefix(d, "sha256:")), append(data, nil)
	}
	h := newAsyncHash()
	cw := &countWriter{w: h}
	i := 0
	err = Walk(io.TeeReader(f, cw), Limits{}, func(e Entry, body io.Reader) error {
		if i >= len(names) || e.Name != names[i] {
			return errStop
		}
		if data[i] != nil {
			got, err := io.ReadAll(body)
			if err != nil || !bytes.Equal(got, data[i]) {
				return errStop
			}
		}
		i++
		return nil
	})
	sum := hex.EncodeToString(h.Sum())
	if err != nil || i != len(names) || sum != want {
		return nil, false
	}
	return &Part{Name: filepath.Base(path), Size: cw.n, SHA256: sum, Blobs: len(blobs)}, true
}

// ParseSize reads a size in bytes: a number (decimals allowed) and a unit:
// none or B (bytes); K, M, G, T or KiB, MiB, GiB, TiB (powers of 1024);
// KB, MB, GB, TB (powers of 1000, as media are labelled: a 4.7 GB disc
// holds 4.7e9 bytes).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	var mult float64
	switch strings.ToUpper(unit) {
	case "", "B":
		mult = 1
	case "K", "KIB":
		mult = 1 << 10
	case "M", "MIB":
		mult = 1 << 20
	case "G", "GIB":
		mult = 1 << 30
	case "T", "TIB":
		mult = 1 << 40
	case "KB":
		mult = 1e3
	case "MB":
		mult = 1e6
	case "GB":
		mult = 1e9
	case "TB":
		mult = 1e12
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (B, K/KiB, M/MiB, G/GiB, T/TiB, or KB, MB, GB, TB in powers of 1000)", s, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number and a unit (4G, 4.7GB, 700MiB)", s)
	}
	return int64(f * mult), nil
}

// sha256Hex is the sha256 of data, in hex.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeChecksum writes FILE.sha256 beside path ("<hex>  <name>", as
// sha256sum does).
func writeChecksum(path, sum string) error {
	return scratch.WriteFile(ChecksumPath(path), []byte(sum+"  "+filepath.Base(path)+"\n"), 0o644)
}

// findIndex returns the one NAME.parts.json in dir.
func findIndex(dir string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.parts.json"))
	if err != nil {
		return "", err
	}
	switch len(m) {
	case 0:
		return "", fmt.Errorf("%s: no NAME.parts.json (the index of a split archive) in this directory", dir)
	case 1:
		return m[0], nil
	}
	return "", fmt.Errorf("%s: %d split archives (%s): name the NAME.parts.json to read", dir, len(m), strings.Join(m, ", "))
}

// SplitIndex says whether path names a split archive (its NAME.parts.json,
// or a directory holding one) and returns the index's path.
func SplitIndex(path string) (string, bool, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		idx, err := findIndex(path)
		return idx, err == nil, err
	}
	return path, strings.HasSuffix(path, ".parts.json"), nil
}

// ReadParts reads the index of a split archive (NAME.parts.json) and
// checks it against its .sha256 when there. Errors name the file.
func ReadParts(path string) (*PartsIndex, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if want, ok, err := readChecksum(path); err != nil {
		return nil, err
	} else if ok && sha256Hex(data) != want {
		return nil, fmt.Errorf("%s: sha256 is %s, but %s says %s: %w", path, sha256Hex(data), ChecksumPath(path), want, ErrCorrupt)
	}
	var idx PartsIndex
	if err := json.Unmarshal(data, &idx); err != nil || idx.SchemaVersion != 1 || len(idx.Parts) == 0 {
		return nil, fmt.Errorf("%s: not the index of a split archive (schemaVersion 1, parts): %v", path, err)
	}
	for i, p := range idx.Parts {
		if p.Name != filepath.Base(p.Name) || !(strings.HasSuffix(p.Name, ".tgz") || strings.HasSuffix(p.Name, ".tar")) || len(p.SHA256) != 64 {
			return nil, fmt.Errorf("%s: parts[%d]: %q is not a part beside the index (NAME.part-NNNN.tgz or .tar with its sha256)", path, i, p.Name)
		}
	}
	return &idx, nil
}

// errMissingParts lists the parts of idx not beside it (or of another
// size than it says), in one error; nil when all are there.
func missingParts(path string, idx *PartsIndex) error {
	var bad []string
	for i, p := range idx.Parts {
		st, err := os.Stat(filepath.Join(filepath.Dir(path), p.Name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			bad = append(bad, fmt.Sprintf("part %d of %d (%s) is missing", i+1, len(idx.Parts), p.Name))
		case err != nil:
			bad = append(bad, err.Error())
		case st.Size() != p.Size:
			bad = append(bad, fmt.Sprintf("part %d of %d (%s) has %d bytes, the index says %d: it is truncated or damaged", i+1, len(idx.Parts), p.Name, st.Size(), p.Size))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &EntryError{Err: fmt.Errorf("%s: %s: copy them again: %w", path, strings.Join(bad, "; "), ErrCorrupt)}
}
