package volumepolicy

import (
	"encoding/json"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// supportedVersion is the only document version Velero defines.
const supportedVersion = "v1"

// document is the top level of a policies file. Policies stay raw so that
// each one is decoded on its own and its errors can name it.
type document struct {
	Version        string            `json:"version"`
	VolumePolicies []json.RawMessage `json:"volumePolicies"`
	// IncludeExcludePolicy is read only to refuse it with a clear message.
	IncludeExcludePolicy json.RawMessage `json:"includeExcludePolicy"`
}

type policyDoc struct {
	Conditions *conditionsDoc `json:"conditions"`
	Action     actionDoc      `json:"action"`
}

type actionDoc struct {
	Type string `json:"type"`
	// Parameters are accepted for compatibility and not used: Velero's own
	// skip, snapshot and fs-backup ignore them too, only plugins read them.
	Parameters map[string]any `json:"parameters"`
}

type conditionsDoc struct {
	Capacity     string            `json:"capacity"`
	StorageClass []string          `json:"storageClass"`
	CSI          *csiDoc           `json:"csi"`
	NFS          *nfsDoc           `json:"nfs"`
	VolumeTypes  []string          `json:"volumeTypes"`
	PVCLabels    map[string]string `json:"pvcLabels"`
	PVCPhase     []string          `json:"pvcPhase"`
}

type csiDoc struct {
	Driver           string            `json:"driver"`
	VolumeAttributes map[string]string `json:"volumeAttributes"`
}

type nfsDoc struct {
	Server string `json:"server"`
	Path   string `json:"path"`
}

// decodeDocument reads YAML or JSON (JSON is read as YAML) and checks the
// top level. Duplicate keys are refused, as Velero's YAML reader does.
func decodeDocument(data []byte) (document, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return document{}, fmt.Errorf("not a YAML or JSON document: %w", err)
	}
	if string(js) == "null" {
		return document{}, errors.New("empty document")
	}
	var doc document
	if err := decodeStrict(js, &doc); err != nil {
		return document{}, err
	}
	if doc.Version != supportedVersion {
		return document{}, fmt.Errorf("version %q is not supported (want %q)", doc.Version, supportedVersion)
	}
	if len(doc.IncludeExcludePolicy) > 0 && string(doc.IncludeExcludePolicy) != "null" {
		return document{}, errors.New("includeExcludePolicy is not supported: filter resources with the backup's own include and exclude rules")
	}
	return doc, nil
}
