package pipeline

import (
	"github.com/operator-publish/publish/internal/target"
)

// newTarget makes the target of o's cluster (o.Target, looked up in
// internal/target) with its own settings o.TargetSettings. An unknown
// name is an *InputError.
func (o *Options) newTarget() (target.Target, error) {
	s := target.Settings{
		Cluster: o.Cluster, Render: o.Render, Own: o.TargetSettings, PlainHTTP: o.Mirror.PlainHTTP,
		Logf: o.logf, Warnf: o.warnf, Now: o.Now,
	}
	if o.Sign != nil {
		s.Sign = o.Sign.Sign
	}
	return target.New(o.Target, s)
}
