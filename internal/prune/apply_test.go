package prune

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/model"
)

// TestApplyRefused: a registry that refuses deletes (405 UNSUPPORTED, as
// distribution without storage.delete.enabled answers) stops apply with a
// *RefusedError saying how to enable them; nothing was deleted.
func TestApplyRefused(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			io.WriteString(w, `{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, _ := random.Image(256, 1)
	d, _ := img.Digest()
	ref, _ := name.ParseReference(host + "/m/op/bundle:v1.0.0")
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	c := newCatalogRepo(t)
	art := func(present bool) []model.ArtifactRecord {
		return []model.ArtifactRecord{{Name: "op", Present: true, Registry: host, Repository: "m/op/bundle", Versions: []model.VersionRecord{
			{Version: "1.0.0", Tag: "v1.0.0", Present: present, BundleDigest: d.String()},
		}}}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.commit(t0, map[string][]model.ArtifactRecord{"global": art(true)})
	c.commit(t0.AddDate(0, 1, 0), map[string][]model.ArtifactRecord{"global": art(false)})
	parse := func(s string) (name.Reference, error) { return name.ParseReference(s, name.Insecure) }
	p, err := MakePlan(context.Background(), Options{CatalogDir: c.dir, Now: t0.AddDate(1, 0, 0), OlderThan: DefaultOlderThan, Parse: parse, Remote: []remote.Option{}})
	if err != nil || len(p.Entries) != 1 {
		t.Fatalf("plan: %v %+v", err, p)
	}
	res, err := Apply(context.Background(), p, ApplyOptions{CatalogDir: c.dir, Parse: parse})
	var re *RefusedError
	if !errors.As(err, &re) || len(re.Done) != 0 || !strings.Contains(err.Error(), "storage.delete.enabled: true") {
		t.Fatalf("apply: %v, want a *RefusedError with nothing done", err)
	}
	if len(res.Deleted) != 0 {
		t.Errorf("deleted %v", res.Deleted)
	}
	if _, err := remote.Head(ref); err != nil {
		t.Errorf("the manifest is gone: %v", err)
	}
	p.SchemaVersion = 99
	if _, err := Apply(context.Background(), p, ApplyOptions{CatalogDir: c.dir, Parse: parse}); err == nil || !strings.Contains(err.Error(), "schemaVersion 99") {
		t.Errorf("a plan of another schema: %v", err)
	}
}
