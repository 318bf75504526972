// Package deploy carries the install's files that cairn's own binary
// needs: the CRDs of its resources, which `cairn dev --sandbox` and the
// tests install the way the chart does.
package deploy

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed chart/crds/*.yaml
var crdFiles embed.FS

// CRDs are the CustomResourceDefinitions of cairn.io, generated from
// api/v1alpha1 by `make generate`.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crdFiles, "chart/crds/*.yaml")
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, name := range files {
		data, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
