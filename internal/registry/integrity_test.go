package registry

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestVerifyReader: bytes of another digest, and more bytes than the
// size, are a *DigestMismatchError naming the host; the right bytes read
// to io.EOF; a read error before the end passes unchanged.
func TestVerifyReader(t *testing.T) {
	body := []byte("the layer")
	want := v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sha256.Sum256(body))}
	read := func(data []byte, size int64) error {
		_, err := io.ReadAll(VerifyReader(io.NopCloser(strings.NewReader(string(data))), "src.example.com", want, size))
		return err
	}
	if err := read(body, int64(len(body))); err != nil {
		t.Errorf("the right bytes: %v", err)
	}
	var dm *DigestMismatchError
	lie := append([]byte(nil), body...)
	lie[0] ^= 1
	if err := read(lie, int64(len(body))); !errors.As(err, &dm) || dm.Host != "src.example.com" || dm.Got == "" || Classify(err) != KindDigestMismatch {
		t.Errorf("other bytes: %v", err)
	}
	if err := read(append(body, '!'), int64(len(body))); !errors.As(err, &dm) || dm.Got != "" {
		t.Errorf("more bytes: %v", err)
	}
	broken := io.MultiReader(strings.NewReader("the"), iotestErr{})
	if _, err := io.ReadAll(VerifyReader(io.NopCloser(broken), "h", want, int64(len(body)))); !errors.Is(err, errBroken) {
		t.Errorf("a broken read: %v", err)
	}
}

var errBroken = errors.New("connection reset by peer")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errBroken }

// TestLocalDiskFull: a write that fails for want of space on this machine
// (ENOSPC, from /dev/full), however wrapped, is KindLocalDisk, not a
// registry that cannot be reached, and is not retried.
func TestLocalDiskFull(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("/dev/full: %v", err) // Linux always has it
	}
	defer f.Close()
	_, werr := f.Write([]byte("a blob"))
	if werr == nil {
		t.Fatal("writing /dev/full succeeded")
	}
	err = &url.Error{Op: "Get", URL: "https://r.example.com/v2/", Err: fmt.Errorf("writing the blob: %w", werr)}
	if k := Classify(err); k != KindLocalDisk {
		t.Fatalf("kind %d, want KindLocalDisk", k)
	}
	if Retryable(err) || !NeedsFix(err) {
		t.Errorf("retryable %v, needs a fix %v", Retryable(err), NeedsFix(err))
	}
	msg := DescribeSide(Flags{}, Destination, "copying", "r.example.com", err).Error()
	if !strings.Contains(msg, "disk is full") || strings.Contains(msg, "cannot reach") {
		t.Errorf("message: %s", msg)
	}
}
