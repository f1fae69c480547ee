package redact

import (
	"slices"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://ghp_abcdefgh12345678@github.com/o/r.git": "https://github.com/o/r.git",
		"https://user:secret@git.example.com/a.git":       "https://git.example.com/a.git",
		"https://user:secret@git.example.com":             "https://git.example.com",
		"http://TOKEN@host:3000?x=1":                      "http://host:3000?x=1",
		"ssh://git@host/a.git":                            "ssh://host/a.git",
		"https://git.example.com/a.git":                   "https://git.example.com/a.git",
		"git@host:o/r.git":                                "git@host:o/r.git",
		"/local/path":                                     "/local/path",
		"https://us%zzer:p@host/x":                        "https://host/x", // does not parse
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	in := `fatal: unable to access "https://TOKEN@h/x.git": clone https://u:p@h2/y failed; see https://h3/z@v1`
	want := `fatal: unable to access "https://h/x.git": clone https://h2/y failed; see https://h3/z@v1`
	if got := Text(in); got != want {
		t.Errorf("Text:\n got %s\nwant %s", got, want)
	}
}

func TestSecrets(t *testing.T) {
	for in, want := range map[string][]string{
		"https://ghp_abcdefgh12345678@github.com/o/r.git": {"ghp_abcdefgh12345678"},
		"https://oauth2:glpat-xyz@gitlab.com/o/r.git":     {"glpat-xyz"},
		"https://bob@host/x":                              nil,
		"ssh://git@host/x":                                nil,
		"https://host/x":                                  nil,
	} {
		if got := Secrets(in); !slices.Equal(got, want) {
			t.Errorf("Secrets(%q) = %q, want %q", in, got, want)
		}
	}
}
