package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// loadManifests returns what operator-framework/api's
// manifests.GetBundleFromDir returns for the bundle directory dir, parsing
// each file's YAML once. GetBundleFromDir (v0.45.0,
// pkg/manifests/bundleloader.go) parses a manifest up to three times: a
// walk of the whole directory decodes each file to find the CSV, then the
// CSV's directory is read again, each file decoded as unstructured and the
// CSV and CRDs a third time into their types; it gzips every file again to
// give the bundle's compressed size. Here each file is converted from YAML
// to JSON once (sigs.k8s.io/yaml, as that loader does), and the unstructured
// and typed objects are decoded from that JSON.
//
// The fast way is taken only for a bundle it reads with no error and no
// doubt: on the first error of any kind (an unreadable or unparseable file,
// two CSVs, a directory or hidden file in the CSV's directory, a CRD
// version neither v1 nor v1beta1, no CSV), it returns GetBundleFromDir's own
// result, so a broken bundle gets operator-framework's message unchanged.
// A CSV or CRD file of several YAML documents, or whose JSON does not
// decode into its type as it stands (a number where the type wants text,
// which sigs.k8s.io/yaml converts), is decoded by that library's own code.
// TestLoadManifestsEqual checks the results equal over the corpus.
//
// keys maps each CRD of the bundle (a *v1.CustomResourceDefinition or
// *v1beta1.CustomResourceDefinition of its V1CRDs or V1beta1CRDs) decoded
// the fast way to the sha256 of the YAML it was decoded from: the same key,
// the same CRD. It is nil when the bundle was read by operator-framework's
// loader.
func loadManifests(dir string) (b *manifests.Bundle, keys map[any][32]byte, err error) {
	l := &fastLoader{files: map[string]*parsedFile{}, keys: map[any][32]byte{}}
	if b, ok := l.load(dir); ok {
		return b, l.keys, nil
	}
	b, err = manifests.GetBundleFromDir(dir)
	return b, nil, err
}

// errSlow ends the fast way: GetBundleFromDir decides.
var errSlow = errors.New("not the fast way")

// parsedFile is one file of a bundle directory: its bytes, the first YAML
// document's JSON, the object that JSON decodes to, and whether the file
// holds more than one document.
type parsedFile struct {
	data  []byte
	key   [32]byte // sha256 of the first document
	json  []byte
	obj   *unstructured.Unstructured
	multi bool
}

type fastLoader struct {
	files  map[string]*parsedFile
	keys   map[any][32]byte
	bundle *manifests.Bundle
	ann    manifests.AnnotationsFile
	found  bool
}

func (l *fastLoader) load(dir string) (*manifests.Bundle, bool) {
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return errSlow
		}
		if info.IsDir() {
			if strings.HasPrefix(info.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(info.Name(), ".") {
			return nil
		}
		return l.visit(path, info.Name())
	})
	if err != nil || !l.found || l.bundle == nil {
		return nil, false
	}
	if err := l.sizes(dir); err != nil {
		return nil, false
	}
	b := l.bundle
	// As bundleLoader's addChannelsFromAnnotationsFile and
	// addPackageFromAnnotationsFile do.
	if channels := strings.Split(l.ann.Annotations.Channels, ","); len(channels) > 0 && len(b.Channels) == 0 {
		b.Channels = channels
	}
	if d := l.ann.Annotations.DefaultChannelName; len(d) > 0 && len(b.DefaultChannel) == 0 {
		b.DefaultChannel = d
	}
	b.Package = l.ann.Annotations.PackageName
	return b, true
}

// visit is bundleLoader.LoadBundleWalkFunc for one file.
func (l *fastLoader) visit(path, name string) error {
	if strings.HasPrefix(name, "annotations") {
		data, err := os.ReadFile(path)
		if err != nil {
			return errSlow
		}
		var ann manifests.AnnotationsFile
		if err := k8syaml.Unmarshal(data, &ann); err != nil {
			return errSlow
		}
		l.ann = ann
	}
	pf, err := l.parse(path)
	if errors.Is(err, errSlow) {
		return errSlow
	}
	if err != nil {
		// The walk of operator-framework/api decodes the file as JSON
		// when it starts like JSON (the first 30 bytes,
		// k8s.io/apimachinery's GuessJSONStream), else as YAML as parse
		// does, and passes over a file it cannot decode.
		if k8syaml.IsJSONBuffer(data30(path)) {
			return errSlow
		}
		return nil
	}
	if pf.obj.GetKind() != v1alpha1.ClusterServiceVersionKind {
		return nil
	}
	if l.found {
		return errSlow // a second CSV: operator-framework says what is wrong
	}
	l.found = true
	b, err := l.loadDir(filepath.Dir(path), pf.obj.GetName())
	if err != nil {
		return errSlow
	}
	l.bundle = b
	return nil
}

// data30 is the first 30 bytes of the file at path (fewer when it is
// shorter or cannot be read).
func data30(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 30)
	n, _ := io.ReadFull(f, buf)
	return buf[:n]
}

// parse reads path and decodes its first YAML document, once: later calls
// return the same parsedFile. An error is errSlow when the file cannot be
// read, else the decoding's.
func (l *fastLoader) parse(path string) (*parsedFile, error) {
	if pf, ok := l.files[path]; ok {
		return pf, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errSlow // operator-framework's walk stops there
	}
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	doc, err := r.Read()
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(doc) == 0 {
		return nil, io.EOF // no document: nothing decodes
	}
	next, err := r.Read()
	pf := &parsedFile{data: data, multi: len(next) != 0 || (err != nil && err != io.EOF)}
	if pf.json, pf.key, err = files.yamlToJSON(doc); err != nil {
		return nil, err
	}
	pf.obj = &unstructured.Unstructured{}
	if err := pf.obj.UnmarshalJSON(pf.json); err != nil {
		return nil, err
	}
	l.files[path] = pf
	return pf, nil
}

// loadDir is operator-framework/api's loadBundle: every file of dir is an
// object of the bundle, the CSV and CRDs typed.
func (l *fastLoader) loadDir(dir, csvName string) (*manifests.Bundle, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	b := &manifests.Bundle{Name: csvName}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			return nil, errSlow
		}
		pf, err := l.parse(path)
		if err != nil {
			return nil, err
		}
		b.Objects = append(b.Objects, pf.obj)
		switch pf.obj.GetKind() {
		case v1alpha1.ClusterServiceVersionKind:
			if b.CSV != nil {
				return nil, errSlow
			}
			if _, err := pf.typed(path, func() any { b.CSV = &v1alpha1.ClusterServiceVersion{}; return b.CSV }); err != nil {
				return nil, err
			}
		case "CustomResourceDefinition":
			switch pf.obj.GetAPIVersion() {
			case apiextensionsv1beta1.SchemeGroupVersion.String():
				var crd *apiextensionsv1beta1.CustomResourceDefinition
				fast, err := pf.typed(path, func() any { crd = &apiextensionsv1beta1.CustomResourceDefinition{}; return crd })
				if err != nil {
					return nil, err
				}
				if fast {
					l.keys[crd] = pf.key
				}
				b.V1beta1CRDs = append(b.V1beta1CRDs, crd)
			case apiextensionsv1.SchemeGroupVersion.String():
				var crd *apiextensionsv1.CustomResourceDefinition
				fast, err := pf.typed(path, func() any { crd = &apiextensionsv1.CustomResourceDefinition{}; return crd })
				if err != nil {
					return nil, err
				}
				if fast {
					l.keys[crd] = pf.key
				}
				b.V1CRDs = append(b.V1CRDs, crd)
			default:
				return nil, errSlow
			}
		}
	}
	return b, nil
}

// typed decodes the file into the value fresh returns (a new one per
// attempt): from its JSON when that decodes as it stands, else as
// operator-framework/api's loadBundle does, with the YAML decoder it
// opened (so that a file of several documents decodes as it does there).
// It reports whether the value came from the file's first document's JSON
// (fast).
func (pf *parsedFile) typed(path string, fresh func() any) (fast bool, err error) {
	if !pf.multi && json.Unmarshal(pf.json, fresh()) == nil {
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	dec := k8syaml.NewYAMLToJSONDecoder(f)
	if err := dec.Decode(&unstructured.Unstructured{}); err != nil {
		return false, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	return false, dec.Decode(fresh())
}

// sizes is bundleLoader.calculateCompressedBundleSize: the bytes of every
// file below dir (hidden ones too) and of each gzipped and base64-encoded.
func (l *fastLoader) sizes(dir string) error {
	return filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		var data []byte
		if pf, ok := l.files[path]; ok {
			data = pf.data
		} else if data, err = os.ReadFile(path); err != nil {
			return err
		}
		l.bundle.Size += info.Size()
		n, err := files.compressedLen(data)
		if err != nil {
			return err
		}
		l.bundle.CompressedSize += n
		return nil
	})
}
