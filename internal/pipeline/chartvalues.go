package pipeline

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/mirror"
)

// kindEnv is what the kinds of package read with for o's cluster
// (kind.Env): the client mc, the cluster, its Kubernetes version
// (KubeVersion), and the charts' values files
// (ChartValues), read from the package repo checkout (Source) through
// os.Root, so that no path or symbolic link leads out of it.
func (o Options) kindEnv(mc *mirror.Client) kind.Env {
	env := kind.Env{Client: mc, Cluster: o.Cluster}
	if o.KubeVersion != nil {
		env.KubeVersion = o.KubeVersion(o.Cluster)
	}
	if o.ChartValues == nil {
		return env
	}
	source := o.Source
	if source == "" {
		source = "."
	}
	lookup := o.ChartValues
	env.Values = func(cluster, artifact string) (*kind.ValuesFile, error) {
		p := lookup(cluster, artifact)
		if p == "" {
			return nil, nil
		}
		root, err := os.OpenRoot(source)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		data, err := root.ReadFile(filepath.FromSlash(p))
		if err != nil {
			return nil, fmt.Errorf("values file %s (publish.yaml clusters.%s.values.%s): %w", p, cluster, artifact, err)
		}
		return &kind.ValuesFile{Path: p, Data: data}, nil
	}
	return env
}
