package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// getter serves objects by "resource ns/name" and counts the reads.
type getter struct {
	objects map[string]string
	reads   map[string]int
}

func (g *getter) List(context.Context, kube.Resource, kube.ListOptions) (*kube.Page, error) {
	return nil, errors.New("not used")
}

func (g *getter) Get(_ context.Context, r kube.Resource, ns, name string) (*kube.Item, error) {
	key := r.GVR.Resource + " " + refKey(ns, name)
	g.reads[key]++
	switch raw, ok := g.objects[key]; {
	case name == "secret-plans":
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: r.GVR.Resource}, name, errors.New("no"))
	case !ok:
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: r.GVR.Resource}, name)
	default:
		it, err := kube.DecodeItem([]byte(raw), r)
		return &it, err
	}
}

// TestCollectAdditionalStoresEachOnce: the additional items extensions
// asked for are read and stored, each once however often asked for, none
// the backup already holds; the gone, the forbidden and those of a type
// the cluster does not serve are warnings, and so is one labelled to be
// left out of backups. A second attempt stores the
// same.
func TestCollectAdditionalStoresEachOnce(t *testing.T) {
	ctx := context.Background()
	locURL := "file://" + t.TempDir()
	cms := v1alpha1.ResourceType{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	pvs := v1alpha1.ResourceType{Version: "v1", Resource: "persistentvolumes", Kind: "PersistentVolume"}
	loc, err := location.OpenPlain(ctx, locURL)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Backup("b")
	require.NoError(t, loc.WriteJSON(ctx, keys.Plan(), StoredPlan{Types: []v1alpha1.ResourceType{cms, pvs}}))
	// shop/collected is in the backup already, as a listed ConfigMap.
	require.NoError(t, loc.WriteAll(ctx, keys.Part("configmaps", 0, 0),
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"collected","namespace":"shop"}}`+"\n")))
	refs := func(rs ...extension.ObjectRef) []byte {
		var out []byte
		for _, r := range rs {
			line, _ := json.Marshal(r)
			out = append(append(out, line...), '\n')
		}
		return out
	}
	require.NoError(t, loc.WriteAll(ctx, keys.AdditionalRefs(keys.Part("widgets.demo.cairn.io", 0, 0)), refs(
		extension.ObjectRef{Resource: "configmaps", Namespace: "other", Name: "extra"},
		extension.ObjectRef{Resource: "configmaps", Namespace: "shop", Name: "collected"},
		extension.ObjectRef{Resource: "persistentvolumes", Name: "pv-1"},
		extension.ObjectRef{Resource: "configmaps", Namespace: "other", Name: "gone"},
		extension.ObjectRef{Resource: "configmaps", Namespace: "other", Name: "secret-plans"},
		extension.ObjectRef{Group: "nowhere.example", Resource: "things", Name: "x"},
		extension.ObjectRef{Resource: "configmaps", Namespace: "other", Name: "excluded"},
	)))
	require.NoError(t, loc.WriteAll(ctx, keys.AdditionalRefs(keys.Part("widgets.demo.cairn.io", 0, 1)), refs(
		extension.ObjectRef{Resource: "configmaps", Namespace: "other", Name: "extra"},
	)))

	g := &getter{reads: map[string]int{}, objects: map[string]string{
		"configmaps other/extra":    `{"metadata":{"name":"extra","namespace":"other"}}`,
		"configmaps shop/collected": `{"metadata":{"name":"collected","namespace":"shop"}}`,
		"persistentvolumes pv-1":    `{"metadata":{"name":"pv-1"}}`,
		"configmaps other/excluded": `{"metadata":{"name":"excluded","namespace":"other","labels":{"velero.io/exclude-from-backup":"true"}}}`,
	}}
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	acts := &Activities{Lister: g, Log: zap.NewNop(), Clients: &kube.Clients{Discovery: disc}}
	in := v1alpha1.CollectAdditionalInput{Backup: "b", Location: locURL, Options: v1alpha1.BackupOptions{}.WithDefaults()}
	for attempt := range 2 {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts.CollectAdditional)
		val, err := env.ExecuteActivity(acts.CollectAdditional, in)
		require.NoError(t, err, "attempt %d", attempt)
		var res v1alpha1.CollectAdditionalResult
		require.NoError(t, val.Get(&res))
		assert.Equal(t, map[string]int{"configmaps": 1, "persistentvolumes": 1}, res.Resources)
		assert.Equal(t, 4, res.Warnings)
	}
	assert.Equal(t, 2, g.reads["configmaps other/extra"], "read once per attempt, however often asked for")
	assert.Zero(t, g.reads["configmaps shop/collected"], "what the backup holds is not read again")

	stored := map[string]int{}
	all, err := loc.Keys(ctx, keys.AllParts())
	require.NoError(t, err)
	for _, k := range all {
		require.NoError(t, loc.ReadLines(ctx, k, func(line []byte) error {
			var o struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
			}
			require.NoError(t, json.Unmarshal(line, &o))
			stored[o.Kind+" "+refKey(o.Metadata.Namespace, o.Metadata.Name)]++
			return nil
		}))
	}
	assert.Equal(t, map[string]int{"ConfigMap shop/collected": 1, "ConfigMap other/extra": 1, "PersistentVolume pv-1": 1}, stored)

	var tr TypeResult
	require.NoError(t, loc.ReadJSON(ctx, keys.TypeResult(additionalResultKey), &tr))
	joined := strings.Join(tr.Warnings, "\n")
	assert.Contains(t, joined, "configmaps other/gone, which does not exist")
	assert.Contains(t, joined, "configmaps other/secret-plans, which the backup may not read")
	assert.Contains(t, joined, "things.nowhere.example, a type the cluster does not serve")
	assert.Contains(t, joined, "configmaps other/excluded, labelled velero.io/exclude-from-backup=true: left out")
}

// TestIsRefusal: a 4xx answer is the asked-for item's problem; a 429 and
// a 5xx are for the step to retry.
func TestIsRefusal(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	assert.True(t, isRefusal(apierrors.NewBadRequest("no")))
	assert.True(t, isRefusal(apierrors.NewMethodNotSupported(gr, "get")))
	assert.False(t, isRefusal(apierrors.NewTooManyRequests("slow down", 1)))
	assert.False(t, isRefusal(apierrors.NewInternalError(errors.New("boom"))))
	assert.False(t, isRefusal(errors.New("connection refused")))
}
