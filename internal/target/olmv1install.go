package target

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/render"
	"sigs.k8s.io/yaml"
)

// BundleChecker is implemented by a target that checks the bundles read
// against its settings. CheckBundles runs in plan and run alike, after
// the changed versions of vs were read and linted and before anything is
// mirrored; versions without a bundle are skipped. Errors are
// *model.InputError.
type BundleChecker interface {
	CheckBundles(vs []*model.Version) error
}

// CheckBundles checks that each ClusterExtension can install the bundles
// of vs it may pick (checkInstallModes).
func (t *olmTarget) CheckBundles(vs []*model.Version) error {
	var bs []installable
	for _, v := range vs {
		if b := kind.BundleOf(v); b != nil {
			bs = append(bs, installableOf(v.Key(), v.Where(), b))
		}
	}
	return t.checkInstallModes(bs)
}

// installable is what checkInstallModes needs of one bundle.
type installable struct {
	key      model.Key
	where    string // the manifest's file:line
	csv      string
	channels []string
	modes    []v1alpha1.InstallMode
}

func installableOf(k model.Key, where string, b *bundle.Bundle) installable {
	in := installable{key: k, where: where, csv: b.CSVName, channels: b.Channels}
	if b.CSV != nil {
		in.modes = b.CSV.Spec.InstallModes
	}
	return in
}

// checkInstallModes returns an input error naming each ClusterExtension
// of publish.yaml that OLM v1 cannot install as configured: a bundle of
// its package that its channels and version range may pick, whose CSV's
// install modes do not fit its watchNamespace (none: AllNamespaces;
// olm.InstallModeProblem). The error is at the entry's publish.yaml line
// and names the field to set.
func (t *olmTarget) checkInstallModes(bs []installable) error {
	if !t.s.OLM.UsesOLMv1() {
		return nil
	}
	var errs []error
	for i, e := range t.s.OLM.Extensions {
		field := fmt.Sprintf("clusters.%s.olm.clusterExtensions[%d]", t.s.Cluster, i)
		where := e.Where
		if where == "" {
			where = "publish.yaml " + field
		}
		byProblem := map[string][]string{}
		var picked []installable
		var modes [][]v1alpha1.InstallMode
		for _, b := range bs {
			if b.key.Artifact == e.Package && e.Selects(b.key.Version, b.channels) {
				picked, modes = append(picked, b), append(modes, b.modes)
			}
		}
		watch := e.WatchNamespace
		if watch == "" {
			watch = olm.DefaultWatchNamespace(modes, e.Namespace)
		}
		for _, b := range picked {
			if p := olm.InstallModeProblem(b.modes, e.Namespace, watch, field); p != "" {
				byProblem[p] = append(byProblem[p], fmt.Sprintf("%s (%s, %s)", b.key.Version, b.csv, b.where))
			}
		}
		problems := make([]string, 0, len(byProblem))
		for p := range byProblem {
			problems = append(problems, p)
		}
		sort.Strings(problems)
		for _, p := range problems {
			sort.Strings(byProblem[p])
			errs = append(errs, fmt.Errorf("%s: OLM v1 cannot install %s %s as configured: %s", where, e.Package, strings.Join(byProblem[p], ", "), p))
		}
	}
	if len(errs) > 0 {
		return model.Input(errors.Join(errs...))
	}
	return nil
}

// watchNamespaces returns, by index of the ClusterExtensions, the watch
// namespace each one without its own is rendered with
// (olm.DefaultWatchNamespace over the entries of pkgs it may pick); none
// for the others.
func (t *olmTarget) watchNamespaces(pkgs []olm.Package) map[int]string {
	out := map[int]string{}
	for i, e := range t.s.OLM.Extensions {
		if e.WatchNamespace != "" {
			continue
		}
		var modes [][]v1alpha1.InstallMode
		for _, p := range pkgs {
			for _, en := range p.Entries {
				if b := en.Bundle; p.Name == e.Package && b != nil && b.CSV != nil && e.Selects(b.Version, b.Channels) {
					modes = append(modes, b.CSV.Spec.InstallModes)
				}
			}
		}
		if w := olm.DefaultWatchNamespace(modes, e.Namespace); w != "" {
			out[i] = w
		}
	}
	return out
}

// watchNamespaceAt reads spec.config.inline.watchNamespace of the
// ClusterExtension in file of the catalog cat ("" when the file or the
// field is absent): what the last run derived, for RenderFromState.
func watchNamespaceAt(cat render.Files, file string) (string, error) {
	data, ok := cat[file]
	if !ok {
		return "", nil
	}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Config struct {
					Inline struct {
						WatchNamespace string `json:"watchNamespace"`
					} `json:"inline"`
				} `json:"config"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		if obj.Kind == "ClusterExtension" {
			return obj.Spec.Config.Inline.WatchNamespace, nil
		}
	}
	return "", nil
}

// checkPrepared runs checkInstallModes on every present version of vs,
// read in this run (t.bundles) or taken from the last catalog image
// (t.reused), so that run refuses a ClusterExtension whose unchanged
// bundles it cannot install either.
func (t *olmTarget) checkPrepared(vs []*model.Version) error {
	var bs []installable
	for _, v := range vs {
		k := v.Key()
		if b := t.bundles[k]; b != nil {
			bs = append(bs, installableOf(k, v.Where(), b))
		} else if e, ok := t.reused[k]; ok && e.Bundle != nil {
			bs = append(bs, installableOf(k, v.Where(), e.Bundle))
		}
	}
	return t.checkInstallModes(bs)
}
