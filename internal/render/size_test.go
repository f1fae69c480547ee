package render

import (
	"errors"
	"github.com/operator-publish/publish/internal/checkout"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
)

// TestBuildObjectTooLarge: a rendered object of 256 KiB or more (here an
// Artifact whose description got past lint) stops the render with an
// error naming the file and the limit, instead of a commit the cluster
// side cannot apply.
func TestBuildObjectTooLarge(t *testing.T) {
	root := t.TempDir()
	copyDir(t, "testdata/catalog", root)
	arts := sample()
	arts[0].Description = strings.Repeat("x", lint.MaxObjectSize)
	gen, err := Generated("global", Config{}, arts)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkout.Sync(root, []string{GeneratedBase("global")}, gen); err != nil {
		t.Fatal(err)
	}
	_, err = Build(mustReadDir(t, root), "global")
	var se *lint.ObjectSizeError
	var oe *OverlayError
	if !errors.As(err, &se) || !errors.As(err, &oe) || !strings.Contains(err.Error(), "rendered/global/") || !strings.Contains(err.Error(), "256 KiB") {
		t.Fatalf("Build: %v", err)
	}
}
