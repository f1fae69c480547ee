package pipeline

import (
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
)

// newTarget makes the target of o's cluster (o.Target, looked up in
// internal/target) with its own settings o.TargetSettings. An unknown
// name is an *InputError.
func (o *Options) newTarget() (target.Target, error) {
	s := target.Settings{
		Cluster: o.Cluster, Render: o.Render, Own: o.TargetSettings, PlainHTTP: o.Mirror.PlainHTTP,
		Logf: o.logf, Warnf: o.warnf,
	}
	if o.Sign != nil {
		s.Sign = o.Sign.Sign
	}
	return target.New(o.Target, s)
}

// RenderInto writes publish/generated and rendered/<cluster> of the alauda
// target into the catalog working tree at root: target.RenderInto.
func RenderInto(root, cluster string, cfg render.Config, arts []model.ArtifactRecord, prevKey string) (string, error) {
	return target.RenderInto(root, cluster, cfg, arts, prevKey)
}
