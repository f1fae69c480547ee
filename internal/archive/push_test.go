package archive

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// mapTo maps a source reference to dstHost/prefix/<repository path>.
func mapTo(dstHost, prefix string) func(string) (name.Reference, error) {
	return func(src string) (name.Reference, error) {
		r, err := name.ParseReference(src)
		if err != nil {
			return nil, err
		}
		s := dstHost + "/" + prefix + "/" + r.Context().RepositoryStr()
		switch r := r.(type) {
		case name.Tag:
			s += ":" + r.TagStr()
		case name.Digest:
			s += "@" + r.DigestStr()
		}
		return name.ParseReference(s)
	}
}

func TestPushAndResume(t *testing.T) {
	out, pkg, refs := packageFixture(t, t.TempDir(), nil)
	dst := startRegistry(t)
	// First push: interrupted after two blobs.
	c, cancel := context.WithCancel(ctx(t))
	var n atomic.Int32
	_, err := Push(c, out, PushOptions{Map: mapTo(dst, "mirror"), Jobs: 1, TempDir: t.TempDir(), afterBlob: func() {
		if n.Add(1) == 2 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("interrupted push reported success")
	}
	t.Logf("interrupted: %v", err)
	for _, r := range refs {
		d, _ := mapTo(dst, "mirror")(r)
		if _, err := remote.Head(d); err == nil {
			t.Errorf("%s is visible after an interrupted push", d)
		}
	}
	// Second push resumes: the blobs of the first are skipped.
	res, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst, "mirror"), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// The two blobs of the first push are not uploaded again: skipped,
	// or, the one the first push had also mounted into a second
	// repository, mounted again (only the first repository is asked).
	if res.BlobsPushed != pkg.Blobs-2 || res.BlobsSkipped < 1 {
		t.Errorf("resumed: pushed %d skipped %d (mounted %d) of %d blobs", res.BlobsPushed, res.BlobsSkipped, res.BlobsMounted, pkg.Blobs)
	}
	if len(res.Images) != 3 || res.Images[len(res.Images)-1].Bundle != true {
		t.Errorf("images %+v (bundle last)", res.Images)
	}
	for _, im := range res.Images {
		src, _ := remote.Head(mustRef(t, im.Source))
		d, err := remote.Head(mustRef(t, im.Destination))
		if err != nil || d.Digest != src.Digest || d.Digest.String() != im.Digest {
			t.Errorf("%s: destination %v (%v), source %s", im.Destination, d, err, src.Digest)
		}
		if !strings.HasPrefix(im.Destination, dst+"/mirror/example/") {
			t.Errorf("mapping: %s", im.Destination)
		}
	}
	// Third push: nothing to do.
	res, err = Push(ctx(t), out, PushOptions{Map: mapTo(dst, "mirror")})
	if err != nil {
		t.Fatal(err)
	}
	if res.BlobsPushed != 0 || res.BlobsSkipped != pkg.Blobs {
		t.Errorf("rerun pushed %d blobs", res.BlobsPushed)
	}
	for _, im := range res.Images {
		if !im.Skipped {
			t.Errorf("rerun pushed %s", im.Destination)
		}
	}
}

func TestPushSkipPush(t *testing.T) {
	out, _, _ := packageFixture(t, t.TempDir(), nil)
	dst := startRegistry(t)
	_, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst, "x"), SkipPush: true})
	if err == nil || !strings.Contains(err.Error(), "--skip-push: not at the destination") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst, "x")}); err != nil {
		t.Fatal(err)
	}
	res, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst, "x"), SkipPush: true})
	if err != nil || len(res.Images) != 3 || res.BlobsPushed != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestPushRefusesDamagedArchive(t *testing.T) {
	out, _, refs := packageFixture(t, t.TempDir(), nil)
	dst := startRegistry(t)
	bad := filepath.Join(t.TempDir(), "bad.tgz")
	copyTruncated(t, out, bad)
	_, err := Push(ctx(t), bad, PushOptions{Map: mapTo(dst, "x")})
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("err = %v", err)
	}
	// Nothing half-pushed is visible: no tag names a blob that may be missing.
	for _, r := range refs {
		d, _ := mapTo(dst, "x")(r)
		if _, err := remote.Head(d); err == nil {
			t.Errorf("%s is tagged after a push of a truncated archive", d)
		}
	}
}

// TestPushHeadsPerBlob: a fresh push asks one HEAD per blob, in the first
// repository that needs it (as crane does), and none before a mount into
// another. An upload is a POST and one PUT (no PATCH); a mount one POST,
// and, as go-containerregistry's registry does not mount (it answers 202
// Accepted), the destination's copy read (one GET) into the upload it
// started (one PUT). The images' manifests are asked once each, while the
// archive is read. A push again asks no blob: every manifest is there.
func TestPushHeadsPerBlob(t *testing.T) {
	out, _, _ := packageFixture(t, t.TempDir(), nil)
	dst := startRecorder(t)
	res, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst.host, "mirror")})
	if err != nil {
		t.Fatal(err)
	}
	heads := dst.count("HEAD ", "/blobs/")
	mheads := dst.count("HEAD ", "/manifests/")
	posts, mounts := dst.count("POST ", "/blobs/uploads/"), dst.count("POST ", "/blobs/uploads/", "mount=")
	puts, gets, patches := dst.count("PUT ", "/blobs/uploads/"), dst.count("GET ", "/blobs/"), dst.count("PATCH ")
	t.Logf("blobs %d pushed, %d mounted; %d blob HEADs, %d POSTs (%d mounts), %d PUTs, %d GETs, %d PATCHes; %d images, %d manifest HEADs", res.BlobsPushed, res.BlobsMounted, heads, posts, mounts, puts, gets, patches, len(res.Images), mheads)
	if res.BlobsMounted == 0 || heads != res.BlobsPushed {
		t.Errorf("%d blob HEADs for %d blobs pushed and %d mounted, want %d", heads, res.BlobsPushed, res.BlobsMounted, res.BlobsPushed)
	}
	if n := res.BlobsPushed + res.BlobsMounted; posts != n || mounts != res.BlobsMounted || puts != n || gets != res.BlobsMounted || patches != 0 {
		t.Errorf("%d POSTs (%d mounts), %d PUTs, %d blob GETs, %d PATCHes; want %d (%d), %d, %d, 0", posts, mounts, puts, gets, patches, n, res.BlobsMounted, n, res.BlobsMounted)
	}
	// One per image, asked while the archive is read, and one per child
	// of the two-platform index: none again before the PUTs.
	if mheads != len(res.Images)+2 {
		t.Errorf("%d manifest HEADs for %d images (one an index of 2), want %d", mheads, len(res.Images), len(res.Images)+2)
	}
	again, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst.host, "mirror")})
	if err != nil {
		t.Fatal(err)
	}
	if n := dst.count("HEAD ", "/blobs/") - heads; n != 0 || again.BlobsPushed != 0 || again.BlobsMounted != 0 || again.BlobsSkipped != res.BlobsPushed {
		t.Errorf("push again: %d blob HEADs, %+v", n, again)
	}
}
