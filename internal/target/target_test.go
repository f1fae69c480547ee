package target

import (
	"errors"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/model"
)

// TestLookup: "" is the default target, every registered name resolves to
// itself, and an unknown name is an error naming the flag and the
// publish.yaml field.
func TestLookup(t *testing.T) {
	if k, err := Lookup(""); err != nil || k.Name != Alauda {
		t.Errorf(`Lookup(""): %v %v, want alauda`, k.Name, err)
	}
	for _, n := range Names() {
		k, err := Lookup(n)
		if err != nil || k.Name != n || k.New(Settings{Cluster: "c"}) == nil {
			t.Errorf("Lookup(%q): %v %v", n, k.Name, err)
		}
	}
	_, err := Lookup("openshift")
	if err == nil || !strings.Contains(err.Error(), "--target") || !strings.Contains(err.Error(), "clusters.<cluster>.target") || !strings.Contains(err.Error(), "alauda or olm") {
		t.Errorf("Lookup(openshift): %v", err)
	}
	var ie *model.InputError
	if _, err := New("openshift", Settings{}); !errors.As(err, &ie) {
		t.Errorf("New(openshift): %v, want an *model.InputError", err)
	}
}

// TestOLMCheck: a bad olm setting is an input error naming the cluster's
// publish.yaml entry; alauda has nothing to check.
func TestOLMCheck(t *testing.T) {
	tg, _ := New(OLM, Settings{Cluster: "edge", Own: OLMOptions{CatalogImage: "registry.local/catalog@sha256:00"}})
	var ie *model.InputError
	if err := tg.Check(); !errors.As(err, &ie) || !strings.Contains(err.Error(), "publish.yaml clusters.edge.olm") {
		t.Errorf("olm check: %v", err)
	}
	if got := tg.Images(); len(got) != 1 || got[0] != DefaultOPMImage {
		t.Errorf("olm images: %v", got)
	}
	a, _ := New(Alauda, Settings{Cluster: "global"})
	if k, _ := Lookup(Alauda); !k.Caps.Overlay {
		t.Error("alauda does not render through the cluster's overlay")
	}
	if err := a.Check(); err != nil || len(a.Images()) != 0 {
		t.Errorf("alauda: %v %v", err, a.Images())
	}
}

// TestRenderedBy: a render key names the target that recorded it by its
// prefix (the olm target's "olm <catalog image>"), else the default, and
// only the default renders again from the catalog alone (publish check).
func TestRenderedBy(t *testing.T) {
	for key, want := range map[string]string{
		"olm registry.local/olm/catalog@sha256:" + strings.Repeat("a", 64): OLM,
		"":       Alauda,
		"0f3c9a": Alauda,
	} {
		k := RenderedBy(key)
		if k.Name != want || k.Caps.RenderFromCatalog != (want == Alauda) {
			t.Errorf("RenderedBy(%q): %s %+v, want %s", key, k.Name, k.Caps, want)
		}
	}
}
