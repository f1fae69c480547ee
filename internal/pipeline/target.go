package pipeline

import (
	"github.com/operator-publish/publish/internal/target"
)

// Names and settings of the targets, which live in internal/target; kept
// here for the callers of Options.
const (
	TargetAlauda      = target.Alauda
	TargetOLM         = target.OLM
	DefaultOPMImage   = target.DefaultOPMImage
	CatalogSourceFile = target.CatalogSourceFile
)

// OLMOptions configures the olm target (target.OLMOptions).
type OLMOptions = target.OLMOptions

// newTarget makes the target of o's cluster (o.Target, looked up in
// internal/target). An unknown name is an *InputError.
func (o *Options) newTarget() (target.Target, error) {
	s := target.Settings{
		Cluster: o.Cluster, Render: o.Render, OLM: o.OLM, PlainHTTP: o.Mirror.PlainHTTP,
		Logf: o.logf, Warnf: o.warnf,
	}
	if o.Sign != nil {
		s.Sign = o.Sign.Sign
	}
	return target.New(o.Target, s)
}
