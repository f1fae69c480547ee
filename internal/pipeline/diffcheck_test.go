package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/operator-publish/publish/internal/mirror"
)

// corruptObject overwrites the loose object h of the repo at dir with bytes
// that are not a zlib stream: reading it is an error other than "not
// found" (a corrupt object, not a missing one).
func corruptObject(t *testing.T, dir string, h plumbing.Hash) {
	t.Helper()
	p := filepath.Join(dir, ".git", "objects", h.String()[:2], h.String()[2:])
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatalf("object %s is not loose: %v", h, err)
	}
	if err := os.WriteFile(p, []byte("not a zlib stream"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestChangeDetectionFailureIsAnError: a change detection that fails (a
// corrupt tree of the published source commit) stops run with an error
// naming change detection, on the incremental way (where the second
// comparison, since the published commit, fails after the first, since
// --base, succeeded) and on the full way; it is never a full read with a
// false reason, nor "every version counts as changed".
func TestChangeDetectionFailureIsAnError(t *testing.T) {
	for _, full := range []bool{false, true} {
		name := "incremental"
		if full {
			name = "full"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.run(t)
			head, _ := f.repo.Head()
			published := head.Hash()
			f.addVersion(t, "1.2.0")
			head, _ = f.repo.Head()
			base := head.Hash().String()
			f.addVersion(t, "1.3.0")
			// The packages/tiny tree of the published commit: no later
			// commit has it (each adds a version below it).
			c, err := f.repo.CommitObject(published)
			if err != nil {
				t.Fatal(err)
			}
			tree, _ := c.Tree()
			sub, err := tree.Tree("packages/tiny")
			if err != nil {
				t.Fatal(err)
			}
			corruptObject(t, f.source, sub.Hash)
			if full {
				base = published.String() // the one comparison fails
			}
			var log bytes.Buffer
			_, err = Run(context.Background(), Options{
				Source: f.source, Base: base,
				Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
				Catalog: catalogOpts(f.catalog), AllowEmpty: true,
				Log:      slog.New(slog.NewTextHandler(&log, nil)),
				fullRead: full,
			})
			if err == nil || !strings.Contains(err.Error(), "change detection") {
				t.Fatalf("run: %v, want a change detection error\n%s", err, log.String())
			}
			if why := tookFullRead(log.String()); !full && why != "" {
				t.Errorf("the failing comparison became a full read: %s", why)
			}
			if strings.Contains(log.String(), "every version counts as changed") {
				t.Errorf("the failure became every version changed:\n%s", log.String())
			}
		})
	}
}
