package model

import "testing"

// TestImageRepositoryTag: a destination by tag, by digest, by both, and
// with a port.
func TestImageRepositoryTag(t *testing.T) {
	for ref, want := range map[string][2]string{
		"r.example.com:5000/m/app:v1":        {"r.example.com:5000/m/app", "v1"},
		"r.example.com:5000/m/app@sha256:ab": {"r.example.com:5000/m/app", ""},
		"r.example.com/m/app:v1@sha256:ab":   {"r.example.com/m/app", "v1"},
		"r.example.com:5000/m/app":           {"r.example.com:5000/m/app", ""},
	} {
		if repo, tag := (Image{Destination: ref}).RepositoryTag(); repo != want[0] || tag != want[1] {
			t.Errorf("%s: %q %q, want %q %q", ref, repo, tag, want[0], want[1])
		}
	}
}
