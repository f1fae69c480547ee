package pipeline

import (
	"net/url"

	"github.com/operator-publish/publish/internal/target"
)

// newTarget makes the target of o's cluster (o.Target, looked up in
// internal/target) with its own settings o.TargetSettings. An unknown
// name is an *InputError.
func (o *Options) newTarget() (target.Target, error) {
	rc := o.Render
	if rc.ChartGitURL == "" {
		rc.ChartGitURL = gitURL(o.Catalog.URL)
	}
	if rc.ChartGitPath == "" {
		rc.ChartGitPath = o.Catalog.Path
	}
	s := target.Settings{
		Cluster: o.Cluster, Render: rc, Own: o.TargetSettings, PlainHTTP: o.Mirror.PlainHTTP,
		Logf: o.logf, Warnf: o.warnf, Now: o.Now,
	}
	if o.Sign != nil {
		s.Sign = o.Sign.Sign
	}
	return target.New(o.Target, s)
}

// gitURL is the catalog repo's URL as a ChartRepo of type Git names it
// (render.Config.ChartGitURL): without user information, so that no
// credential reaches the catalog.
func gitURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return s
}
