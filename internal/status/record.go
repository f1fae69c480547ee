package status

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"

	catrepo "github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/rollout"
)

// RecordOptions are what Record needs besides the cluster's client.
type RecordOptions struct {
	// Catalog is the catalog repo (--catalog and its flags).
	Catalog gitops.Options
	// Cluster is the cluster (--cluster): its state
	// (publish/state/<cluster>.yaml) names the listed versions and their
	// bundle digests, and its records go to rollout.HealthPath(Cluster).
	Cluster string
	// Now is the time of the records and of the commit (the run's clock;
	// tests inject one).
	Now time.Time
}

// RecordResult is what Record wrote.
type RecordResult struct {
	// Records are the records read this time (the file keeps older ones
	// of versions still listed but not installed now).
	Records []rollout.HealthRecord `json:"records"`
	// Commit is the catalog commit, "" when the file did not change.
	Commit string `json:"commit,omitempty"`
}

// Record is `publish status --record`: it reads the health of every
// version the cluster's state lists (ReadHealth) and commits it, merged
// with the earlier records of versions still listed, to
// rollout.HealthPath(o.Cluster) of the catalog branch, with compare-and-
// swap: a branch that moved on meanwhile is read again (up to 3 times).
// Errors: the catalog's (*gitops.UnreachableError, *gitops.AuthError),
// a state or health file that does not parse (naming it), the cluster's.
func Record(ctx context.Context, client dynamic.Interface, o RecordOptions) (*RecordResult, error) {
	var err error
	for range 3 {
		var res *RecordResult
		res, err = recordOnce(ctx, client, o)
		if err == nil || !gitops.IsRejected(err) {
			return res, err
		}
	}
	return nil, fmt.Errorf("recording health: the catalog branch kept moving: %w", err)
}

func recordOnce(ctx context.Context, client dynamic.Interface, o RecordOptions) (*RecordResult, error) {
	tip, err := catrepo.OpenTip(ctx, o.Catalog)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	files, err := tip.Files(gitops.StateDir, nil)
	if err != nil {
		return nil, err
	}
	st, err := gitops.ReadState(files, o.Cluster)
	if err != nil {
		return nil, err
	}
	recs, err := ReadHealth(ctx, client, st.Artifacts, o.Now)
	if err != nil {
		return nil, err
	}
	p := rollout.HealthPath(o.Cluster)
	h := &rollout.HealthFile{Cluster: o.Cluster}
	data, ok, err := tip.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if ok {
		if h, err = rollout.ParseHealth(p, data); err != nil {
			return nil, err
		}
	}
	listed := map[[2]string]bool{}
	for _, a := range st.Artifacts {
		for _, v := range a.Versions {
			listed[[2]string{a.Name, normVersion(v.Version)}] = a.Present && v.Present
		}
	}
	h.Merge(recs, func(a, v string) bool { return listed[[2]string{a, v}] })
	out, err := h.Marshal()
	if err != nil {
		return nil, err
	}
	w, err := tip.Commit([]catrepo.Change{{Path: p, Data: out}}, catrepo.CommitOptionsFor(o.Catalog, recordMessage(o.Cluster, recs), o.Now))
	if err != nil {
		return nil, err
	}
	if _, err := tip.Push(ctx, w); err != nil {
		return nil, err
	}
	res := &RecordResult{Records: recs}
	if !w.Commit.IsZero() {
		res.Commit = w.Commit.String()
	}
	return res, nil
}

// recordMessage is the commit message of a health record.
func recordMessage(cluster string, recs []rollout.HealthRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "health: record %d installs on cluster %s\n\n", len(recs), cluster)
	for _, r := range recs {
		fmt.Fprintf(&b, "- %s %s: %s\n", r.Artifact, r.Version, r.Health)
	}
	return b.String()
}

// PrintRecorded writes one line per record and the commit to w.
func PrintRecorded(w io.Writer, cluster string, res *RecordResult) {
	for _, r := range res.Records {
		line := fmt.Sprintf("health: %s %s on %s: %s (%s)", r.Artifact, r.Version, cluster, r.Health, r.Source)
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		fmt.Fprintln(w, line)
	}
	if res.Commit == "" {
		fmt.Fprintf(w, "health: %s unchanged\n", rollout.HealthPath(cluster))
		return
	}
	fmt.Fprintf(w, "health: committed %s (%s)\n", rollout.HealthPath(cluster), res.Commit)
}
