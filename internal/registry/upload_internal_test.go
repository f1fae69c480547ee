package registry

import (
	"net/url"
	"testing"
)

// TestUploadLocation: an upload's Location is resolved against the URL of
// the request (a path alone, or absolute), keeps its query, and is refused
// when it sends the blob to an internal address of another host, however
// the address is spelled.
func TestUploadLocation(t *testing.T) {
	req, _ := url.Parse("https://reg.example:5000/v2/team/app/blobs/uploads/")
	for _, tc := range []struct{ header, want string }{
		{"/v2/team/app/blobs/uploads/u1?_state=abc%3D", "https://reg.example:5000/v2/team/app/blobs/uploads/u1?_state=abc%3D"},
		{"u2", "https://reg.example:5000/v2/team/app/blobs/uploads/u2"},
		{"https://reg.example:5000/v2/team/app/blobs/uploads/u3", "https://reg.example:5000/v2/team/app/blobs/uploads/u3"},
		{"https://storage.example/upload?sig=x", "https://storage.example/upload?sig=x"},
		{"http://127.0.0.1:9/x", ""},
		{"http://10.1.2.3/x", ""},
		{"http://[::1]/x", ""},
		{"http://[fe80::1%25eth0]/x", ""},
		{"http://169.254.169.254/latest", ""},
		{"http://0.0.0.0/x", ""},
		{"http://127.1/x", ""},
		{"http://0x7f000001/x", ""},
		{"http://2130706433/x", ""},
		{"ftp://reg.example/x", ""},
		{"", ""},
	} {
		got, err := location(req, tc.header)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("Location %q accepted as %s", tc.header, got)
		case tc.want != "" && err != nil:
			t.Errorf("Location %q: %v", tc.header, err)
		case tc.want != "" && got.String() != tc.want:
			t.Errorf("Location %q resolved to %s, want %s", tc.header, got, tc.want)
		}
	}
	// The registry's own host may be a loopback address.
	local, _ := url.Parse("http://127.0.0.1:5000/v2/a/blobs/uploads/")
	if got, err := location(local, "http://127.0.0.1:5000/v2/a/blobs/uploads/u?_state=s"); err != nil || got.RawQuery != "_state=s" {
		t.Errorf("same-host Location: %v %v", got, err)
	}
}
