package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/operator-publish/publish/internal/chartmuseum"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestChartsClassicRepoAuth: a chart whose spec.artifact is a classic
// chart repository that wants basic auth (a real ChartMuseum started
// with --basic-auth-user/--basic-auth-pass) is read with the credentials
// of Helm's repository config, the file `helm repo add --username
// --password` writes (HELM_REPOSITORY_CONFIG; written here with the Helm
// SDK, as the helm CLI writes it). Without an entry for the repository
// the run stops, naming `helm repo add`; with it the chart is read and
// pushed to the destination as OCI, its digest in the state, and the
// password is in no log line.
func TestChartsClassicRepoAuth(t *testing.T) {
	const user, pass = "reader", "classic-repo-pass"
	cm := testenv.ChartMuseum(t, "--basic-auth-user="+user, "--basic-auth-pass="+pass)
	e := newChartEnv(t)
	ctx := context.Background()
	repoURL := cm.URL + "/stable"
	if _, err := (chartmuseum.Repo{URL: repoURL, Auth: chartmuseum.Auth{Username: user, Password: pass}}).Upload(ctx, "cron", "0.1.0", e.archives["cron 0.1.0"]); err != nil {
		t.Fatal(err)
	}
	e.writeChart(t, "cron", "0.1.0", "artifact: "+repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.commit(t, "cron from a repository with a password")
	config := filepath.Join(t.TempDir(), "repositories.yaml")
	t.Setenv(kind.HelmRepositoryConfigEnv, config)
	var log bytes.Buffer
	o := e.options()
	o.Log = slog.New(slog.NewTextHandler(&log, nil))

	if _, err := Run(ctx, o); err == nil || !strings.Contains(err.Error(), "helm repo add") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("run without the repository's credentials: %v; want the 401 naming helm repo add", err)
	}
	f := repo.NewFile()
	f.Update(&repo.Entry{Name: "other", URL: "https://charts.example.com", Username: "u", Password: "p"},
		&repo.Entry{Name: "corp", URL: repoURL + "/", Username: user, Password: pass})
	if err := f.WriteFile(config, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, o); err != nil {
		t.Fatalf("run with the repository in Helm's repository config: %v", err)
	}
	rec := e.state(t)["cron"]
	if rec.Type != "chart" || len(rec.Versions) != 1 || rec.Versions[0].BundleDigest == "" {
		t.Fatalf("state: %+v", rec)
	}
	d := mustRef(t, rec.Registry+"/"+rec.Repository+":x").Context().Digest(rec.Versions[0].BundleDigest)
	if _, err := remote.Head(d, e.reg.Options()...); err != nil {
		t.Errorf("cron at the destination %s: %v", d, err)
	}
	if strings.Contains(log.String(), pass) {
		t.Errorf("the password is in the log:\n%s", log.String())
	}
}
