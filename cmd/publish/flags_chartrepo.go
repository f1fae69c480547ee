package main

import (
	"github.com/spf13/pflag"

	"github.com/operator-publish/publish/internal/chartmuseum"
)

// chartRepoFlags are the credentials of the ChartMuseum a cluster's
// charts are uploaded to (publish.yaml clusters.<cluster>.chartRepo):
// --chart-repo-username and --chart-repo-password (its --basic-auth-user
// and --basic-auth-pass), or --chart-repo-token (a bearer token, its
// --bearer-auth). Never in publish.yaml; each has its PUBLISH_* variable,
// and the password and token are masked in the CI log.
type chartRepoFlags struct {
	auth chartmuseum.Auth
}

func (c *chartRepoFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.auth.Username, "chart-repo-username", "", "user name of the ChartMuseum of publish.yaml clusters.<cluster>.chartRepo (HTTP basic auth)")
	fs.StringVar(&c.auth.Password, "chart-repo-password", "", "password of the ChartMuseum of publish.yaml clusters.<cluster>.chartRepo (HTTP basic auth)")
	fs.StringVar(&c.auth.Token, "chart-repo-token", "", "bearer token of the ChartMuseum of publish.yaml clusters.<cluster>.chartRepo (instead of a user name and password)")
	secret(fs, "chart-repo-password", "chart-repo-token")
}
