// Package publish holds files embedded into the publish binary.
package publish

import "embed"

// CatalogTemplate is catalog-repo-template/: the files a new, empty catalog
// repo is seeded with on the first publish.
//
//go:embed catalog-repo-template
var CatalogTemplate embed.FS
