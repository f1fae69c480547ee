package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type tarEntry struct {
	h    tar.Header
	data string
}

func reg(name, data string) tarEntry {
	return tarEntry{h: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data: data}
}

func buildTgz(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	writeEntries(t, zw, entries)
	zw.Close()
	return buf.Bytes()
}

// plainTar is buildTgz without gzip: an uncompressed archive (NAME.tar).
func plainTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	writeEntries(t, &buf, entries)
	return buf.Bytes()
}

// writeEntries writes entries to w as a tar, ended.
func writeEntries(t *testing.T, w io.Writer, entries []tarEntry) {
	t.Helper()
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := e.h
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tw.Close()
}

func blobName(data string) string {
	s := sha256.Sum256([]byte(data))
	return BlobsDir + hex.EncodeToString(s[:])
}

// TestHostileArchives feeds Verify archives that must each be refused with
// a message naming the entry and the problem.
func TestHostileArchives(t *testing.T) {
	layout := reg(LayoutFile, layoutData)
	index := reg(IndexFile, `{"schemaVersion":2,"manifests":[]}`)
	valid, _, _ := packageFixture(t, t.TempDir(), nil)
	good, err := os.ReadFile(valid)
	if err != nil {
		t.Fatal(err)
	}
	// a copy of the good archive with one blob's content changed in place,
	// recompressed: tar and gzip are intact, the digest is not.
	var wrongDigest []byte
	blob := "layer bytes"
	wrongDigest = buildTgz(t, []tarEntry{layout, index, reg(blobName(blob), "other bytes")})
	huge := reg(blobName(blob), blob)
	huge.h.Size = 1 << 40
	link := tarEntry{h: tar.Header{Name: "blobs/sha256/x", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}
	hard := tarEntry{h: tar.Header{Name: IndexFile, Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}}
	dev := tarEntry{h: tar.Header{Name: "packages/dev.yaml", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}
	corrupt := append([]byte(nil), good...)
	for i := len(corrupt) / 2; i < len(corrupt)/2+64; i++ {
		corrupt[i] ^= 0xff
	}

	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"traversal", buildTgz(t, []tarEntry{layout, reg("packages/../../etc/cron.d/x.yaml", "x")}), "entry packages/../../etc/cron.d/x.yaml: path traversal (..) not allowed"},
		{"absolute", buildTgz(t, []tarEntry{reg("/etc/passwd", "x")}), "entry /etc/passwd: absolute path not allowed"},
		{"symlink", buildTgz(t, []tarEntry{layout, link}), `entry blobs/sha256/x: a link (to "/etc/passwd") is not allowed`},
		{"hardlink", buildTgz(t, []tarEntry{layout, hard}), `entry index.json: a link (to "../../etc/shadow") is not allowed`},
		{"device", buildTgz(t, []tarEntry{layout, dev}), "entry packages/dev.yaml: a device file or FIFO is not allowed"},
		{"duplicate", buildTgz(t, []tarEntry{layout, index, reg(IndexFile, `{}`)}), "entry index.json: duplicate entry"},
		{"unexpected file", buildTgz(t, []tarEntry{layout, reg("run.sh", "x")}), "entry run.sh: unexpected file"},
		{"huge entry", func() []byte {
			// only the header: the size alone must be refused
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			tw.WriteHeader(&layout.h)
			tw.Write([]byte(layout.data))
			tw.WriteHeader(&huge.h)
			tw.Flush()
			zw.Close()
			return buf.Bytes()
		}(), "larger than the limit of 17179869184 bytes for one blob"},
		{"truncated", good[:len(good)*2/3], "truncated: the archive ends inside this entry"},
		{"corrupt", corrupt, "the archive is damaged"},
		{"wrong digest", wrongDigest, "content has digest sha256:"},
		{"not gzip", []byte("PK\x03\x04 a zip file"), "neither a gzip-compressed archive (NAME.tgz) nor a tar"},
		{"plain tar with a symlink", plainTar(t, []tarEntry{layout, link}), `entry blobs/sha256/x: a link (to "/etc/passwd") is not allowed`},
		{"plain tar with a traversal", plainTar(t, []tarEntry{layout, reg("packages/../../x.yaml", "x")}), "entry packages/../../x.yaml: path traversal (..) not allowed"},
		{"plain tar with a wrong digest", plainTar(t, []tarEntry{layout, index, reg(blobName(blob), "other bytes")}), "content has digest"},
		{"no layout", buildTgz(t, []tarEntry{index}), "incomplete archive: no oci-layout file"},
		{"bytes after the gzip stream", append(append([]byte(nil), good...), "hidden payload"...), "bytes after the end of the gzip stream"},
		{"a second gzip member", append(append([]byte(nil), good...), buildTgz(t, []tarEntry{reg("packages/x.yaml", "x")})...), "bytes after the end of the gzip stream"},
		{"dot-dot in an index reference", buildTgz(t, []tarEntry{layout, refIndex("reg.example.com/src/../team-b/x:v1", "")}),
			`reference "reg.example.com/src/../team-b/x:v1": repository "src/../team-b/x" has a ".." path component`},
		{"empty component in an index reference", buildTgz(t, []tarEntry{layout, refIndex("reg.example.com/src//x:v1", "")}),
			`has an empty path component`},
		{"port out of range in an index reference", buildTgz(t, []tarEntry{layout, refIndex("reg.example.com:70000/src/x:v1", "")}),
			`registry "reg.example.com:70000" is not DOMAIN[:PORT]`},
		{"bad tag annotation", buildTgz(t, []tarEntry{layout, refIndex("reg.example.com/src/x@sha256:"+strings.Repeat("a", 64), "../x")}),
			`io.operator-publish.tag: tag "../x" is not valid`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.tgz")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Verify(p, Limits{}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err = %v\nwant it to name %s and say %q", err, p, c.want)
			}
			t.Log(err)
		})
	}
	t.Run("checksum mismatch", func(t *testing.T) {
		os.WriteFile(ChecksumPath(valid), []byte(strings.Repeat("0", 64)+"  ops.tgz\n"), 0o644)
		_, err := Verify(valid, Limits{}, nil)
		if err == nil || !strings.Contains(err.Error(), "ops.tgz.sha256 says 0000") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("total cap", func(t *testing.T) {
		os.Remove(ChecksumPath(valid))
		_, err := Verify(valid, Limits{Total: 4096}, nil)
		if err == nil || !strings.Contains(err.Error(), "expands to more than 4096 bytes") {
			t.Fatalf("err = %v", err)
		}
	})
}

// refIndex is an index.json with one image entry whose reference (and
// destination tag, when not "") are the given annotations.
func refIndex(ref, tag string) tarEntry {
	ann := fmt.Sprintf("%q:%q", AnnotationRefName, ref)
	if tag != "" {
		ann += fmt.Sprintf(",%q:%q", AnnotationTag, tag)
	}
	return reg(IndexFile, `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":2,"digest":"sha256:`+
		strings.Repeat("b", 64)+`","annotations":{`+ann+`}}]}`)
}
