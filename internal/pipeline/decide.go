package pipeline

import (
	"fmt"

	"github.com/operator-publish/publish/internal/gitops"
)

// way is how the engine reads a plan or run: every manifest and the whole
// catalog, or only what a change touches (docs/design.md, "The engine").
type way int

const (
	wayIncremental way = iota
	wayFull
)

// facts are what the engine knows before it reads any manifest: the
// catalog branch tip, the cluster's state header, the render key, change
// detection's bases, the packages directory, the target's capability. They
// are gathered by scope.catalogFacts and scope.sourceFacts (which stop at
// the first fact that forces the full way, leaving the later ones zero)
// and judged by decide alone.
type facts struct {
	cluster string
	// askedFull: the caller asks for the full read (the equivalence
	// tests); changeSet: push --catalog gave the changed versions.
	askedFull, changeSet bool
	// wholeCatalog names the target that renders the whole catalog (no
	// target.Incremental), "" when it renders artifacts one by one.
	wholeCatalog string
	// emptyCatalog: the catalog branch has no commit; legacyState: it has
	// the older single state file; noState: no state file of the cluster.
	emptyCatalog, legacyState, noState bool
	// stateErr: the state file does not split by artifact.
	stateErr error
	// noHeader: the state has no render key or source commit for the
	// cluster, or no artifact.
	noHeader bool
	// missing is a catalog path the incremental way needs that the tip
	// lacks (rendered/<cluster>, the generated kustomization).
	missing string
	// linked is an entry of rendered/<cluster> or of the cluster's
	// generated base that is a symbolic link or a submodule: no render
	// wrote it, and only the full way, which lists every such entry,
	// replaces it.
	linked string
	// keyChanged: the overlays, the render configuration or the artifact
	// selection differ from what the recorded render key says.
	keyChanged bool
	// noPackages is the packages directory when it is not a directory.
	noPackages string
	// noBase: change detection has no base; outsideHistory is the
	// published source commit when it is not in the package repo.
	noBase         bool
	outsideHistory string
	// suspect is a path named like a manifest that is not one publish
	// reads (the full scan reports it).
	suspect string
}

// decide returns the way a plan or run reads, and the reason for the full
// way (""); a pure function of f, the one place that judges the facts, in
// the order they are gathered. Conditions only the reading of the touched
// artifacts can find (a recorded manifest gone without a change, manifest
// paths not recorded, the destination registry changed) make the
// incremental reader give up with *catalog.FullReadRequiredError.
func decide(f facts) (way, string) {
	switch {
	case f.askedFull:
		return wayFull, "asked for"
	case f.changeSet:
		return wayFull, "a change set was given"
	case f.wholeCatalog != "":
		return wayFull, fmt.Sprintf("the %s target renders the whole catalog", f.wholeCatalog)
	case f.emptyCatalog:
		return wayFull, "the catalog branch has no commits"
	case f.legacyState:
		return wayFull, fmt.Sprintf("the catalog has the older single %s: upgrading it to one state file and one generated base per cluster", gitops.LegacyStatePath)
	case f.noState:
		return wayFull, fmt.Sprintf("the catalog has no %s yet", gitops.StatePath(f.cluster))
	case f.stateErr != nil:
		return wayFull, f.stateErr.Error()
	case f.noHeader:
		return wayFull, fmt.Sprintf("the catalog has no render key or source commit for cluster %s", f.cluster)
	case f.missing != "":
		return wayFull, "the catalog has no " + f.missing
	case f.linked != "":
		return wayFull, f.linked + " is a symbolic link or a submodule, not a file publish rendered: it is replaced"
	case f.keyChanged:
		return wayFull, "the overlays, the render configuration or the cluster's artifact selection changed since the last publish"
	case f.noPackages != "":
		return wayFull, f.noPackages + " is not a directory"
	case f.noBase:
		return wayFull, "change detection has no base"
	case f.outsideHistory != "":
		return wayFull, fmt.Sprintf("the published source commit %s is not in the package repo", f.outsideHistory)
	case f.suspect != "":
		return wayFull, f.suspect + " is named like a manifest but is not one publish reads"
	}
	return wayIncremental, ""
}
