package pipeline

import (
	"github.com/operator-publish/publish/internal/render"
	"io"
	"log"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
)

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func catalogOpts(url string) gitops.Options { return gitops.Options{URL: url} }

type gitCheckout struct {
	Branch string
	Create bool
	Hash   plumbing.Hash
}

func (c gitCheckout) opts() *git.CheckoutOptions {
	return &git.CheckoutOptions{Branch: plumbing.ReferenceName(c.Branch), Create: c.Create, Hash: c.Hash}
}

func gitopsReadState(dir string) ([]model.ArtifactRecord, error) {
	cat, err := render.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s, err := gitops.ReadState(cat, "global")
	if err != nil {
		return nil, err
	}
	return s.Artifacts, nil
}

// mustReadDir reads the catalog checkout at dir into memory
// (render.ReadDir).
func mustReadDir(t *testing.T, dir string) render.Files {
	t.Helper()
	cat, err := render.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
