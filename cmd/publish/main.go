package main

import (
	_ "github.com/go-git/go-git/v5"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/operator-framework/api/pkg/operators/v1alpha1"
	_ "github.com/operator-framework/api/pkg/validation"
	_ "github.com/spf13/cobra"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/yaml"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
)

func main() {}
