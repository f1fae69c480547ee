//go:build !unix

package archive

// No O_NONBLOCK or O_NOFOLLOW here (see cache_unix.go): a cached blob is
// trusted as os.Open finds it.
const (
	openNonBlock = 0
	openNoFollow = 0
)
