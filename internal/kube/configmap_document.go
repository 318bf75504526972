package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ErrBadDocument is a ConfigMap that is missing or does not hold one
// document: no retry fixes it.
var ErrBadDocument = errors.New("no document")

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// ConfigMapDocument reads the document a ConfigMap holds in its one data
// key, as Velero's resource modifier and policy ConfigMaps do.
func ConfigMapDocument(ctx context.Context, d dynamic.Interface, namespace, name string) ([]byte, error) {
	cm, err := d.Resource(configMapsGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("configmap %s/%s: %w: it does not exist", namespace, name, ErrBadDocument)
	}
	if err != nil {
		return nil, fmt.Errorf("get configmap %s/%s: %w", namespace, name, err)
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 {
		return nil, fmt.Errorf("configmap %s/%s: %w: it must hold the document in one data key, it has %d", namespace, name, ErrBadDocument, len(data))
	}
	for _, doc := range data {
		return []byte(doc), nil
	}
	return nil, nil
}
