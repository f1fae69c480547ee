package bundle

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"sync"

	sigsyaml "sigs.k8s.io/yaml"
)

// The consecutive versions of a package mostly ship the same files (a CRD
// changes less often than the CSV), and a catalog's bundles are read one
// package after the other: what a file's bytes give (the JSON of its first
// YAML document, its compressed length) is kept by the bytes' sha256, in
// memory bounded by jsonCacheBytes.
const jsonCacheBytes = 32 << 20

// fileCache maps a file's sha256 to what its bytes give. Two generations:
// when the current one holds jsonCacheBytes of JSON it becomes the old one
// and the older is dropped, so what is used keeps being found.
type fileCache struct {
	mu       sync.Mutex
	cur, old map[[32]byte][]byte
	curBytes int
	zlen     map[[32]byte]int64
}

var files = &fileCache{cur: map[[32]byte][]byte{}, zlen: map[[32]byte]int64{}}

// yamlToJSON is sigs.k8s.io/yaml's YAMLToJSON of doc, from the cache when
// the same bytes were converted before, and the sha256 of doc. The result
// is shared: never modified.
func (c *fileCache) yamlToJSON(doc []byte) ([]byte, [32]byte, error) {
	key := sha256.Sum256(doc)
	c.mu.Lock()
	j, ok := c.cur[key]
	if !ok {
		if j, ok = c.old[key]; ok {
			c.put(key, j)
		}
	}
	c.mu.Unlock()
	if ok {
		return j, key, nil
	}
	j, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return nil, key, err
	}
	c.mu.Lock()
	c.put(key, j)
	c.mu.Unlock()
	return j, key, nil
}

func (c *fileCache) put(key [32]byte, j []byte) {
	if c.curBytes+len(j) > jsonCacheBytes {
		c.old, c.cur, c.curBytes = c.cur, map[[32]byte][]byte{}, 0
	}
	c.cur[key] = j
	c.curBytes += len(j)
}

// maxSizes bounds the compressed lengths kept (about 48 bytes each).
const maxSizes = 1 << 20

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// compressedLen is the length of operator-framework/api's
// encoding.GzipBase64Encode of data (gzip at the default level, then
// standard base64 with padding), without keeping either: the gzip stream
// is counted, its base64 length computed. From the cache when the same
// bytes were measured before.
func (c *fileCache) compressedLen(data []byte) (int64, error) {
	key := sha256.Sum256(data)
	c.mu.Lock()
	n, ok := c.zlen[key]
	c.mu.Unlock()
	if ok {
		return n, nil
	}
	var cw countWriter
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&cw)
	if _, err := zw.Write(data); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	n = int64(base64.StdEncoding.EncodedLen(int(cw)))
	c.mu.Lock()
	if len(c.zlen) >= maxSizes {
		clear(c.zlen)
	}
	c.zlen[key] = n
	c.mu.Unlock()
	return n, nil
}

// countWriter counts the bytes written to it.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
