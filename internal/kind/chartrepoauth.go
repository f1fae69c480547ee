package kind

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"helm.sh/helm/v4/pkg/helmpath"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// HelmRepositoryConfigEnv names the variable that says where Helm's
// repository config is (the file `helm repo add` writes), as for the helm
// CLI; unset: Helm's default, $XDG_CONFIG_HOME/helm/repositories.yaml
// (helmpath.ConfigPath).
const HelmRepositoryConfigEnv = "HELM_REPOSITORY_CONFIG"

// repoCredentials are the HTTP basic auth credentials of one classic
// chart repository, from the entry of Helm's repository config whose URL
// is the repository's (`helm repo add NAME URL --username U --password P`,
// optionally --pass-credentials).
type repoCredentials struct {
	repoURL, username, password string
	// passAll sends the credentials to an archive URL on another scheme
	// or host than the repository's too (pass_credentials_all).
	passAll bool
}

// chartRepoCredentials returns the credentials Helm's repository config
// (HelmRepositoryConfigEnv) gives the chart repository at repoURL: those
// of its entry whose url is repoURL (a trailing / aside), nil when no
// entry matches, the entry has no user name and password, or there is no
// such file. The file is read as the helm CLI reads it (repo.LoadFile);
// one that cannot be parsed is an error naming it, never its content.
func chartRepoCredentials(repoURL string) (*repoCredentials, error) {
	p, ok := os.LookupEnv(HelmRepositoryConfigEnv)
	if !ok {
		p = helmpath.ConfigPath("repositories.yaml")
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	f, err := repo.LoadFile(p)
	if err != nil {
		return nil, fmt.Errorf("Helm's repository config %s (%s): not a repositories.yaml the helm CLI reads", p, HelmRepositoryConfigEnv)
	}
	for _, e := range f.Repositories {
		if e == nil || strings.TrimSuffix(e.URL, "/") != strings.TrimSuffix(repoURL, "/") || e.Username == "" || e.Password == "" {
			continue
		}
		return &repoCredentials{repoURL: repoURL, username: e.Username, password: e.Password, passAll: e.PassCredentialsAll}, nil
	}
	return nil, nil
}

// authorize sets the credentials on req as Helm's HTTP getter does: only
// when req goes to the repository's scheme and host (an archive the
// index names on another host gets none) unless passAll. Nil c sets
// nothing.
func (c *repoCredentials) authorize(req *http.Request) {
	if c == nil {
		return
	}
	u, err := url.Parse(c.repoURL)
	if err != nil {
		return
	}
	if c.passAll || (u.Scheme == req.URL.Scheme && u.Host == req.URL.Host) {
		req.SetBasicAuth(c.username, c.password)
	}
}
