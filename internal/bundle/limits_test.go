package bundle_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/operator-publish/publish/internal/bundle"
)

// TestFetchBounds: a bundle image of more than MaxLayers layers, or with
// more than MaxFiles files below manifests/ and metadata/, is refused as
// invalid instead of being read for half an hour.
func TestFetchBounds(t *testing.T) {
	host := startRegistry(t, nil)
	one := layer(t, demoEntries(t)...)
	var layers []v1.Layer
	for range bundle.MaxLayers {
		layers = append(layers, layer(t, reg("usr/share/x", "x")))
	}
	layers = append(layers, one)
	var many []entry
	for i := range bundle.MaxFiles + 1 {
		many = append(many, reg(fmt.Sprintf("manifests/extra/%d.txt", i), "x"))
	}
	for ref, tc := range map[string]struct {
		img  v1.Image
		want string
	}{
		host + "/bounds/layers:v1": {imageOf(t, layers...), fmt.Sprintf("the image has %d layers, more than a bundle can have (%d)", bundle.MaxLayers+1, bundle.MaxLayers)},
		host + "/bounds/files:v1":  {imageOf(t, layer(t, append(demoEntries(t), many...)...)), fmt.Sprintf("hold more than %d files and directories", bundle.MaxFiles)},
	} {
		push(t, ref, tc.img)
		_, err := bundle.Fetch(context.Background(), ref)
		var inv *bundle.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want an *InvalidError saying %q", ref, err, tc.want)
		}
	}
}
