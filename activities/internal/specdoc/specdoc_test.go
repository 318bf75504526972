package specdoc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// upper is a parser that refuses documents that are not upper case.
func upper(data []byte) (string, error) {
	if s := string(data); s == strings.ToUpper(s) {
		return s, nil
	}
	return "", errors.New("not upper case")
}

func TestLoad(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	d := dynamicfake.NewSimpleDynamicClient(scheme,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: "cairn"}, Data: map[string]string{"doc.yaml": "DOC"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: "cairn"}, Data: map[string]string{"a": "A", "b": "B"}})
	ctx := context.Background()
	load := func(ref *v1alpha1.DocumentRef) (string, error) {
		return Load(ctx, d, "cairn", "rules", ref, upper)
	}

	doc, err := load(nil)
	require.NoError(t, err)
	assert.Empty(t, doc, "no reference, no document")
	doc, err = load(&v1alpha1.DocumentRef{Inline: "INLINE"})
	require.NoError(t, err)
	assert.Equal(t, "INLINE", doc)
	doc, err = load(&v1alpha1.DocumentRef{ConfigMap: "good"})
	require.NoError(t, err)
	assert.Equal(t, "DOC", doc)

	for ref, want := range map[v1alpha1.DocumentRef]string{
		{Inline: "lower"}:      `rules (configmap ""): not upper case`,
		{ConfigMap: "missing"}: "rules: configmap cairn/missing",
		{ConfigMap: "two"}:     "it has 2",
	} {
		_, err := load(&ref)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr, "%+v", ref)
		assert.True(t, appErr.NonRetryable(), "%+v: no retry fixes it", ref)
		assert.Equal(t, v1alpha1.ErrTypeInvalidSpec, appErr.Type())
		assert.Contains(t, err.Error(), want)
	}
}

// A ConfigMap the run's caller may not read is refused for good, and the
// refusal says nothing of what it holds.
func TestLoadRefusesWhatTheCallerMayNotRead(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	d := dynamicfake.NewSimpleDynamicClient(scheme,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "worker-settings", Namespace: "cairn"}, Data: map[string]string{"doc.yaml": "SECRET"}})
	d.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "worker-settings", errors.New("alice may not"))
	})
	_, err := Load(context.Background(), d, "cairn", "rules", &v1alpha1.DocumentRef{ConfigMap: "worker-settings"}, upper)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable())
	assert.Equal(t, v1alpha1.ErrTypeForbidden, appErr.Type())
	assert.Contains(t, err.Error(), `configmap "worker-settings" in namespace cairn may not be read by the run's caller`)
	assert.NotContains(t, err.Error(), "SECRET")
}
