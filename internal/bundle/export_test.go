package bundle

import "github.com/operator-framework/api/pkg/manifests"

// LoadManifests is loadManifests, for the tests of package bundle_test.
func LoadManifests(dir string) (*manifests.Bundle, error) {
	b, _, err := loadManifests(dir)
	return b, err
}

// LoadsFast reports whether loadManifests reads dir the fast way, without
// operator-framework/api's loader.
func LoadsFast(dir string) bool {
	l := &fastLoader{files: map[string]*parsedFile{}, keys: map[any][32]byte{}}
	_, ok := l.load(dir)
	return ok
}
