package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/internal/kube"
)

// pageLister answers each resource's list with the page or error it is
// given.
type pageLister struct {
	pages map[string]*kube.Page
	errs  map[string]error
}

func (l pageLister) List(_ context.Context, r kube.Resource, _ kube.ListOptions) (*kube.Page, error) {
	if err := l.errs[r.GVR.Resource]; err != nil {
		return nil, err
	}
	return l.pages[r.GVR.Resource], nil
}

func (pageLister) Get(context.Context, kube.Resource, string, string) (*kube.Item, error) {
	return nil, errors.New("not used")
}

// TestEstimateCallsATypeEmptyOnlyWhenItsListFoundNothing: a failed
// list is an unknown estimate, not an empty type, so collection still
// lists it (and reports why it cannot).
func TestEstimateCallsATypeEmptyOnlyWhenItsListFoundNothing(t *testing.T) {
	res := func(name string) kube.Resource {
		return kube.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: name}}
	}
	lister := pageLister{
		pages: map[string]*kube.Page{
			"secrets":    {},
			"configmaps": {Items: []kube.Item{{Name: "a"}}, Continue: "t1", Remaining: 9_999},
			"services":   {Items: []kube.Item{{Name: "kubernetes"}}},
		},
		errs: map[string]error{
			"pods": apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")),
		},
	}
	got := estimateAll(context.Background(), lister, []kube.Resource{res("secrets"), res("configmaps"), res("services"), res("pods")})
	assert.Equal(t, []typeEstimate{{count: 0, empty: true}, {count: 10_000}, {count: 1}, {}}, got)
}
