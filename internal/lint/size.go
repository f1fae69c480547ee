package lint

import (
	"errors"
	"fmt"

	"github.com/operator-publish/publish/internal/manifest"
)

// Size limits (docs/lint-rules.md, manifest/file-size, manifest/field-size
// and manifest/object-size). The binding one is MaxObjectSize: Argo CD's
// client-side apply keeps a copy of every object it applies in the
// kubectl.kubernetes.io/last-applied-configuration annotation, and
// annotations are capped at 256 KiB in all (the API server itself refuses
// objects over about 1.5 MiB, etcd's request limit). The field limits keep
// what a manifest copies into the Artifact well under it.
const (
	// MaxFileSize is the largest manifest.yaml read (bytes).
	MaxFileSize = manifest.MaxFileSize
	// MaxObjectSize bounds every rendered object's YAML (bytes): it must be
	// smaller.
	MaxObjectSize = 256 << 10
	// MaxDisplayNameSize bounds spec.info.displayName (bytes of text).
	MaxDisplayNameSize = 1 << 10
	// MaxDescriptionSize bounds spec.info.description (bytes of text).
	MaxDescriptionSize = 128 << 10
	// MaxIconSize bounds spec.info.icon (bytes of base64 text, what the
	// file and the objects carry; MaxIconBytes is the decoded image).
	MaxIconSize = 256 << 10
)

// fieldLimits are the text fields that reach a rendered object, with
// their limits, in report order (manifest/field-size). The icon's limit,
// MaxIconSize, is manifest/icon's (checkIcon), with its other checks.
var fieldLimits = []struct {
	field string
	max   int
}{
	{"spec.info.displayName", MaxDisplayNameSize},
	{"spec.info.description", MaxDescriptionSize},
}

// sizeText writes n bytes as "256 KiB", "1 MiB", "1.5 MiB" or "300 bytes".
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkSizes reports the fields of fieldLimits over their limit
// (manifest/field-size).
func (f *mfile) checkSizes() {
	for _, l := range fieldLimits {
		s, ok := f.str(l.field)
		if !ok || len(s) <= l.max {
			continue
		}
		f.addAt(RuleManifestFieldSize, f.node(l.field), fmt.Sprintf("%s is %d bytes, over the %s limit of the field: it is copied into the rendered objects, which must stay under %s", l.field, len(s), sizeText(l.max), sizeText(MaxObjectSize)), "")
	}
}

// ScanFinding turns an error of manifest.Scan about one file (a file the
// lint rules never saw) into an error finding of the rule it breaks:
// manifest/not-a-file (manifest.ErrNotRegular), manifest/file-size
// (manifest.ErrTooLarge), else manifest/parse. These findings are not
// re-graded or waived: the file was not read, so its version cannot be
// published.
func ScanFinding(e *manifest.Error) Finding {
	rule := RuleManifestParse
	switch {
	case errors.Is(e, manifest.ErrNotRegular):
		rule = RuleManifestNotAFile
	case errors.Is(e, manifest.ErrTooLarge):
		rule = RuleManifestFileSize
	}
	f := Finding{Rule: rule, Severity: Error, Path: e.Path, Line: e.Line, Message: e.Msg}
	if rule != RuleManifestParse {
		f.Hint = catalogByID[rule].Hint
	}
	return f
}

// ObjectSizeError says a rendered object is too large to apply: it names
// the file, its size and the limit. It is an input error (what the
// manifests copy into the object must shrink), of rule
// manifest/object-size.
type ObjectSizeError struct {
	Path  string // the rendered file, slash-separated
	Size  int    // bytes of YAML
	Limit int    // MaxObjectSize
}

func (e *ObjectSizeError) Error() string {
	return fmt.Sprintf("%s: the object is %s, over the %s limit of a rendered object (Argo CD's client-side apply keeps a copy of each object in an annotation capped there) [%s]: shorten spec.info.description and spec.info.displayName of the newest manifest of the artifact",
		e.Path, sizeText(e.Size), sizeText(e.Limit), RuleManifestObjectSize)
}

// CheckObjectSize returns an *ObjectSizeError when data, the YAML of one
// rendered object written to path, is MaxObjectSize bytes or more; nil
// otherwise. The render stage calls it for every object it writes.
func CheckObjectSize(path string, data []byte) error {
	if len(data) >= MaxObjectSize {
		return &ObjectSizeError{Path: path, Size: len(data), Limit: MaxObjectSize}
	}
	return nil
}
