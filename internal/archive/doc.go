// Package archive will write and read the offline .tgz of `publish package`
// and `publish push` (one OCI image layout, each blob once) for air-gapped
// sites (DESIGN.md §4). Not implemented yet.
package archive
