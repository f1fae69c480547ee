package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/dynamic"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/scaffold"
)

// RunOptions are the inputs of Run besides the pipeline options.
type RunOptions struct {
	// Namespace is the cluster namespace whose Artifacts and
	// ArtifactVersions are imported.
	Namespace string
	// ManifestsDir is the packages directory of the package repo checkout
	// to write a PackageManifest per imported version into; "" writes none.
	ManifestsDir string
	// DryRun renders the plan and the catalog files that would change, and
	// writes nothing.
	DryRun bool
	// Bundles are the registry options the bundles are read with for
	// ManifestsDir (Stage): the destination registry, with its credentials
	// as source credentials.
	Bundles mirror.Options
}

// Result is what Run did, as far as it got.
type Result struct {
	// Plan is the import plan; nil when Run stopped before making it.
	Plan *Plan
	// Files are the catalog files the commit changes (would change on a
	// dry run), relative to the catalog root.
	Files []string
	// Commit is the catalog commit pushed ("" on a dry run or when nothing
	// changed).
	Commit string
	// Imported is set when the catalog step succeeded (on a dry run: the
	// plan was rendered).
	Imported bool
	// Skeletons are the PackageManifests staged for ManifestsDir (nil
	// without it and on a dry run); Run has written them when it returns
	// no error.
	Skeletons *Skeletons
}

// Run imports the Artifacts and ArtifactVersions of ro.Namespace, read
// through client, into the catalog of o (pipeline.Import: one commit,
// pushed), and writes the PackageManifests of the imported versions into
// ro.ManifestsDir once the catalog commit is pushed. It logs the count of
// objects read to o.Log.
//
// The result is nil when the cluster could not be read (Read's error);
// otherwise it holds what was done even when the error is not nil.
// Conflicts of the plan are a *pipeline.InputError wrapping a
// *ConflictError, a bundle that is missing or not a bundle a
// *pipeline.InputError wrapping a *scaffold.InputError; a failure to
// write the manifests says that the catalog commit is pushed.
func Run(ctx context.Context, client dynamic.Interface, o pipeline.Options, ro RunOptions) (*Result, error) {
	found, err := Read(ctx, client, ro.Namespace)
	if err != nil {
		return nil, err
	}
	if o.Log != nil {
		o.Log.Info(fmt.Sprintf("import: %d Artifacts and %d ArtifactVersions in namespace %s", len(found.Artifacts), len(found.Versions), ro.Namespace))
	}
	r := &Result{}
	res, err := pipeline.Import(ctx, o, pipeline.ImportOptions{
		DryRun: ro.DryRun,
		Plan: func(state *gitops.State) ([]model.ArtifactRecord, error) {
			r.Plan = MakePlan(found, state.Artifacts, Options{Render: o.Render})
			if len(r.Plan.Conflicts) > 0 {
				return nil, &pipeline.InputError{Err: &ConflictError{Conflicts: r.Plan.Conflicts}}
			}
			return r.Plan.Artifacts, nil
		},
		BeforeCommit: func(ctx context.Context) error {
			if ro.ManifestsDir == "" {
				return nil
			}
			var err error
			r.Skeletons, err = Stage(ctx, r.Plan.Artifacts, ro.ManifestsDir, ro.Bundles)
			var ie *scaffold.InputError
			if errors.As(err, &ie) {
				return &pipeline.InputError{Err: err}
			}
			return err
		},
		Describe: commitBody(found.Namespace, o.Cluster),
	})
	if res != nil {
		r.Files, r.Commit = res.Files, res.Commit
	}
	if err != nil {
		return r, err
	}
	r.Imported = true
	if ro.DryRun || r.Skeletons == nil {
		return r, nil
	}
	if err := r.Skeletons.Write(); err != nil {
		return r, fmt.Errorf("%w (the catalog commit %s is pushed; run publish create for the missing manifests)", err, res.Commit)
	}
	return r, nil
}

// commitBody returns the body of the import commit message for namespace
// ns of the cluster rendered as cluster.
func commitBody(ns, cluster string) string {
	return strings.Join([]string{
		fmt.Sprintf("Imported from namespace %s of the cluster rendered as %s: the", ns, cluster),
		"state records each ArtifactVersion's name, which later renders keep.",
	}, "\n") + "\n"
}
