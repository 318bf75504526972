package volumepolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// policyPair puts a valid policy first so that errors must name the second.
func policyPair(second string) string {
	return "version: v1\nvolumePolicies:\n- conditions: {storageClass: [gp2]}\n  action: {type: skip}\n" + second
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{"malformed YAML", "version: v1\nvolumePolicies:\n- conditions: {storageClass: [gp2\n  action: {type: skip}\n",
			[]string{"not a YAML or JSON document", "line"}},
		{"malformed JSON", `{"version": "v1", "volumePolicies": [}`, []string{"not a YAML or JSON document"}},
		{"duplicate key", "version: v1\nversion: v1\n", []string{"already set"}},
		{"empty document", "", []string{"empty document"}},
		{"comment only", "# nothing here\n", []string{"empty document"}},
		{"not a mapping", "- version: v1\n", []string{"want a mapping"}},
		{"unknown version", "version: v2\nvolumePolicies: []\n", []string{`version "v2" is not supported`}},
		{"missing version", "volumePolicies: []\n", []string{`version "" is not supported`}},
		{"unknown top-level field", "version: v1\nvolumePolicy: []\n", []string{`unknown field "volumePolicy"`}},
		{"includeExcludePolicy", "version: v1\nincludeExcludePolicy:\n  excludedNamespaceScopedResources: [secrets]\n",
			[]string{"includeExcludePolicy is not supported"}},
		{"policy not a mapping", policyPair("- skip\n"), []string{"volumePolicies[1]: got string, want a mapping"}},
		{"unknown condition", policyPair("- conditions: {storageClas: [gp3]}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions: unknown field "storageClas"`}},
		{"condition in another case", policyPair("- conditions: {StorageClass: [gp3]}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions: unknown field "StorageClass"`}},
		{"unknown csi field", policyPair("- conditions: {csi: {drivers: [a]}}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.csi: unknown field "drivers"`}},
		{"unknown policy field", policyPair("- condition: {csi: {}}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: unknown field "condition"`}},
		{"unknown action field", policyPair("- action: {type: skip, reason: x}\n"),
			[]string{`volumePolicies[1]: action: unknown field "reason"`}},
		{"unknown action type", policyPair("- action: {type: copy}\n"),
			[]string{`volumePolicies[1]: action: unknown type "copy"`}},
		{"action type in another case", policyPair("- action: {type: Skip}\n"),
			[]string{`volumePolicies[1]: action: unknown type "Skip"`}},
		{"missing action", policyPair("- conditions: {csi: {}}\n"), []string{"volumePolicies[1]: action: type is missing"}},
		{"custom action", policyPair("- action: {type: custom, parameters: {plugin: x}}\n"),
			[]string{`volumePolicies[1]: action: type "custom" is not supported`}},
		{"capacity without comma", policyPair("- conditions: {capacity: 10Gi}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.capacity: "10Gi" is not "min,max"`}},
		{"capacity with two commas", policyPair("- conditions: {capacity: \"1Gi,2Gi,3Gi\"}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.capacity:", "is not \"min,max\""}},
		{"capacity not a quantity", policyPair("- conditions: {capacity: \"ten,20Gi\"}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.capacity: min: "ten"`}},
		{"capacity max not a quantity", policyPair("- conditions: {capacity: \"1Gi,20Gb\"}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.capacity: max: "20Gb"`}},
		{"capacity min above max", policyPair("- conditions: {capacity: \"100Gi,10Gi\"}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.capacity: min 100Gi is above max 10Gi"}},
		{"negative capacity", policyPair("- conditions: {capacity: \"-1Gi,\"}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.capacity: min: "-1Gi" is negative`}},
		{"capacity with a long exponent", policyPair("- conditions: {capacity: \"1e-99999999,\"}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.capacity: min: "1e-99999999": exponent has more than two digits`}},
		{"capacity too long", policyPair("- conditions: {capacity: \",0.00000000000000000000000000000000000000000000000000000000000000001\"}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.capacity: max:", "longer than 64 characters"}},
		{"capacity too large", policyPair("- conditions: {capacity: \"9Ei,\"}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.capacity: min: "9Ei" is 8Ei or more`}},
		{"volumeAttributes without driver", policyPair("- conditions: {csi: {volumeAttributes: {type: gp3}}}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.csi: volumeAttributes needs a driver"}},
		{"unsupported volume type", policyPair("- conditions: {volumeTypes: [csi, rbd]}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.volumeTypes[1]: "rbd" is not supported`}},
		{"unknown claim phase", policyPair("- conditions: {pvcPhase: [bound]}\n  action: {type: skip}\n"),
			[]string{`volumePolicies[1]: conditions.pvcPhase[0]: unknown phase "bound"`}},
		{"empty storage class", policyPair("- conditions: {storageClass: [gp2, \"\"]}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.storageClass[1]: empty"}},
		{"label value not a string", policyPair("- conditions: {pvcLabels: {tier: 1}}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.pvcLabels: got number, want a string; quote the value"}},
		{"storage classes not a list", policyPair("- conditions: {storageClass: gp3}\n  action: {type: skip}\n"),
			[]string{"volumePolicies[1]: conditions.storageClass: got string, want a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.doc))
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, ErrInvalid)
			for _, want := range tt.want {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

func TestParseJSON(t *testing.T) {
	p := mustParse(t, "{\n\t\"version\": \"v1\",\n\t\"volumePolicies\": [\n"+
		"\t\t{\"conditions\": {\"csi\": {\"driver\": \"ebs.csi.aws.com\"}, \"capacity\": \"0,10Gi\"}, \"action\": {\"type\": \"snapshot\"}},\n"+
		"\t\t{\"action\": {\"type\": \"skip\"}}\n"+
		"\t]\n}\n")
	require.Equal(t, 2, p.Len())
	assert.Equal(t, "snapshot by volumePolicies[0]", decision(p, Volume{CSIDriver: "ebs.csi.aws.com", Capacity: size("1Gi")}))
	assert.Equal(t, "skip by volumePolicies[1]", decision(p, Volume{CSIDriver: "ebs.csi.aws.com", Capacity: size("1Ti")}))
}

func TestParseJSONRefusesUnknownField(t *testing.T) {
	_, err := Parse([]byte(`{"version": "v1", "volumePolicies": [{"action": {"type": "skip"}, "priority": 1}]}`))
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, `volumePolicies[0]: unknown field "priority"`)
}

func TestParseAcceptsVeleroDocument(t *testing.T) {
	// The volume policies of Velero's documented template, less the
	// volumeTypes cairn cannot tell apart, with action parameters, which
	// Velero's own actions ignore too.
	p := mustParse(t, `
# currently only supports v1 version
version: v1
volumePolicies:
- conditions:
    capacity: "10,100Gi"
    csi:
      driver: ebs.csi.aws.com
    storageClass:
      - gp2
      - standard
    pvcPhase:
      - Pending
  action:
    type: skip
- conditions:
    capacity: "0,100Gi"
    nfs:
      server: 192.168.200.90
      path: /mnt/data
  action:
    type: skip
- conditions:
    nfs:
      server: 192.168.200.90
  action:
    type: fs-backup
    parameters:
      note: kept for compatibility
- conditions:
    nfs: {}
  action:
    type: skip
- conditions:
    csi: {}
  action:
    type: snapshot
`)
	assert.Equal(t, 5, p.Len())
	assert.Equal(t, "fs-backup by volumePolicies[2]", decision(p, Volume{NFSServer: "192.168.200.90", NFSPath: "/mnt/other", Capacity: size("1Ti")}))
}
