package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// remoteHead returns the commit of branch of the Git repo at url ("" when
// it has none), asked over the wire as a client would.
func remoteHead(t *testing.T, url, branch string) string {
	t.Helper()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.List(&git.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.Name() == plumbing.NewBranchReferenceName(branch) {
			return r.Hash().String()
		}
	}
	return ""
}

// remoteFile reads p on branch of the Git repo at url ("" when absent).
func remoteFile(t *testing.T, url, branch, p string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true, Depth: 1}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, p))
	return string(data)
}

// giteaPR is the part of Gitea's pull request object the test reads
// (GET /repos/{owner}/{repo}/pulls/{index}).
type giteaPR struct {
	Number int    `json:"number"`
	State  string `json:"state"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Merged bool   `json:"merged"`
	Head   struct {
		Ref string `json:"ref"`
		Sha string `json:"sha"`
	} `json:"head"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

// giteaCatalog is the catalog repo of a fixture on a real Gitea server
// (repository "catalog" of the server's user), for the runs that deliver
// pull requests there: newGiteaCatalog seeds it with cluster global
// (fixture.run) and adds the overlays of the clusters named.
type giteaCatalog struct {
	g *testenv.GiteaServer
	// clone is the repository's clone URL, repo its "owner/name".
	clone, repo string
	// token is the forge token of the runs (the owner's; a test may put
	// another in its place).
	token string
	log   syncBuffer
}

func newGiteaCatalog(t *testing.T, f *fixture, clusters ...string) *giteaCatalog {
	t.Helper()
	g := testenv.Gitea(t)
	gc := &giteaCatalog{g: g, clone: g.CreateRepo(t, "catalog"), repo: g.User + "/catalog", token: g.Token}
	f.catalog = g.AuthURL(gc.clone)
	f.run(t)
	f.addOverlays(t, clusters...)
	return gc
}

// deliveryOptions are the options of a run of f's package repo for
// clusters (declared in publish.yaml: declared) on f's catalog, with lint's
// bundle/package off (the fixture's packages have no package manifest)
// and the log into log: the delivery tests' runs.
func (f *fixture) deliveryOptions(log io.Writer, declared []string, clusters ...ClusterOptions) Options {
	return Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
		Log:      slog.New(slog.NewTextHandler(log, nil)),
		Declared: declared,
		Clusters: clusters,
	}
}

// options are the options of a run of f's package repo for clusters on
// the Gitea catalog (deliveryOptions), its log in gc.log and its forge
// Gitea's API with gc.token.
func (gc *giteaCatalog) options(f *fixture, declared []string, clusters ...ClusterOptions) Options {
	o := f.deliveryOptions(&gc.log, declared, clusters...)
	gc.wire(&o)
	return o
}

// wire points o's catalog, forge and log at gc.
func (gc *giteaCatalog) wire(o *Options) {
	o.Log = slog.New(slog.NewTextHandler(&gc.log, nil))
	o.Catalog.URL, o.Catalog.Username, o.Catalog.Password = gc.clone, gc.g.User, gc.g.Token
	o.Forge = func() (forge.Forge, error) {
		return forge.New(forge.Options{Kind: "gitea", APIURL: gc.g.URL + "/api/v1", Token: gc.token, CatalogURL: gc.clone})
	}
}

// run runs o, failing t with the log on an error.
func (gc *giteaCatalog) run(t *testing.T, o Options, what string) *Result {
	t.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, gc.log.String())
	}
	return res
}

// pr reads pull request n.
func (gc *giteaCatalog) pr(t *testing.T, n int) giteaPR {
	t.Helper()
	var pr giteaPR
	if _, err := gc.g.Do(context.Background(), http.MethodGet, fmt.Sprintf("/repos/%s/pulls/%d", gc.repo, n), nil, &pr); err != nil {
		t.Fatal(err)
	}
	return pr
}

// approve approves pull request n at its head commit with the token of a
// reviewer, through Gitea's review API.
func (gc *giteaCatalog) approve(t *testing.T, token string, n int, commit string) {
	t.Helper()
	if _, err := gc.g.DoToken(context.Background(), token, http.MethodPost, fmt.Sprintf("/repos/%s/pulls/%d/reviews", gc.repo, n), map[string]any{"event": "APPROVED", "body": "lgtm", "commit_id": commit}, nil); err != nil {
		t.Fatal(err)
	}
}

// waitMerged waits until Gitea's scheduled merge (auto-merge) merged
// pull request n, polling its API; fails t after a minute.
func (gc *giteaCatalog) waitMerged(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !gc.pr(t, n).Merged {
		if time.Now().After(deadline) {
			t.Fatalf("pull request #%d not merged a minute after its approval: %+v", n, gc.pr(t, n))
		}
		<-tick.C
	}
}
