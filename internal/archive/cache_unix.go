//go:build unix

package archive

import "syscall"

// Flags of the cache's opens: O_NONBLOCK so that a FIFO cannot block the
// open (it changes nothing for a regular file), O_NOFOLLOW so that a blob
// trusted without hashing is a file of the cache, not whatever a symbolic
// link leads to.
const (
	openNonBlock = syscall.O_NONBLOCK
	openNoFollow = syscall.O_NOFOLLOW
)
