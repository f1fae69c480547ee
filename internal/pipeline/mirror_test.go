package pipeline

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
)

// TestMirrorStage: Mirror copies the related images and the bundle of the
// versions below a path, and nothing else; a version whose bundle does not
// exist is an input error (exit 1, as in run) naming the manifest line,
// before anything is mirrored; a missing --image fails naming it.
func TestMirrorStage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var log bytes.Buffer
	o := MirrorOptions{Source: f.source, Paths: []string{"packages/tiny/1.1.0"}, Mirror: mirror.Options{DstRegistry: f.dst + "/m", PlainHTTP: true}, Log: slog.New(slog.NewTextHandler(&log, nil))}
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Versions != 1 || res.Bundles != 1 || res.Related != 2 || res.Report.Copied() != 3 {
		t.Errorf("result %+v, copied %d, want one version, two related images and its bundle", res, res.Report.Copied())
	}
	if !strings.Contains(log.String(), "mirror: 1 package versions, 2 related images, 1 bundles to "+f.dst+"/m") {
		t.Errorf("log: %s", log.String())
	}

	f.writeManifest(t, "other", "1.0.0") // its bundle was never pushed
	o.Paths = []string{"packages/other"}
	res, err = Mirror(ctx, o)
	var ie *InputError
	if !errors.As(err, &ie) || res != nil || !strings.Contains(err.Error(), "packages/other/1.0.0/manifest.yaml:") {
		t.Errorf("missing bundle: %v (%+v), want an input error naming the manifest", err, res)
	}

	var pe *PathError
	if _, err := Mirror(ctx, MirrorOptions{Source: f.source, Paths: []string{"packages/nope"}, Mirror: o.Mirror}); !errors.As(err, &pe) {
		t.Errorf("missing path: %v, want a *PathError", err)
	}

	missing := f.src + "/team/missing:v1"
	res, err = Mirror(ctx, MirrorOptions{Images: []string{missing}, Mirror: mirror.Options{DstRegistry: f.dst + "/m", PlainHTTP: true, Retry: mirror.RetryPolicy{Attempts: 1}}})
	if err == nil || errors.As(err, &ie) || res == nil {
		t.Fatalf("missing image: %v, want an infrastructure error", err)
	}
	if fs := ImageErrors(err); len(fs) != 1 || fs[0].Ref != missing {
		t.Errorf("image errors: %v", fs)
	}
}
