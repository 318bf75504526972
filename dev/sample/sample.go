// Package sample creates a small but realistic application in a cluster,
// the kind of namespace a backup has to get right: workloads, config,
// secrets (one a service-account token), RBAC, a Service with a node port,
// an Ingress, a claim, and a custom resource with its CRD that owns a
// ConfigMap. Seeding is idempotent.
package sample

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/dev/sandbox"
)

// WidgetResource is the custom resource type the sample defines.
var WidgetResource = schema.GroupVersionResource{Group: "demo.cairn.io", Version: "v1", Resource: "widgets"}

// Seed creates the sample application in namespace ns and returns how
// many objects it holds.
func Seed(ctx context.Context, cfg *rest.Config, ns string) (int, error) {
	return SeedWithClaimClass(ctx, cfg, ns, "")
}

// SeedWithClaimClass is Seed with the application's claim of storage
// class class ("" for the cluster's default).
func SeedWithClaimClass(ctx context.Context, cfg *rest.Config, ns, class string) (int, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	labels := map[string]string{"app": "shop"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	created := 0
	step := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		created++
		return nil
	}
	core, rbac, apps := kc.CoreV1(), kc.RbacV1(), kc.AppsV1()
	_, err = core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
	if err := step("namespace", err); err != nil {
		return 0, err
	}
	_, err = core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("shop-settings"),
		Data: map[string]string{"currency": "EUR", "catalog.json": `{"items":["tea","coffee"]}`}}, metav1.CreateOptions{})
	if err := step("configmap", err); err != nil {
		return 0, err
	}
	_, err = core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta("shop-db"),
		StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{})
	if err := step("secret", err); err != nil {
		return 0, err
	}
	_, err = core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("shop")}, metav1.CreateOptions{})
	if err := step("service account", err); err != nil {
		return 0, err
	}
	_, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta("shop-reader"), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{})
	if err := step("role", err); err != nil {
		return 0, err
	}
	_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta("shop-reader"),
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "shop-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "shop", Namespace: ns}}}, metav1.CreateOptions{})
	if err := step("role binding", err); err != nil {
		return 0, err
	}
	replicas := int32(2)
	_, err = apps.Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta("shop-web"), Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			ServiceAccountName: "shop",
			// The sandbox node has this image without a registry: a
			// busybox answering HTTP on port 80.
			Containers: []corev1.Container{{Name: "web", Image: sandbox.BusyboxImage, Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				Command: []string{"sh", "-c", "while true; do printf 'HTTP/1.0 200 OK\\r\\n\\r\\nshop\\n' | nc -l -p 80; done"}}},
		}},
	}}, metav1.CreateOptions{})
	if err := step("deployment", err); err != nil {
		return 0, err
	}
	_, err = core.Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta("shop-web"), Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: labels,
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}},
	}}, metav1.CreateOptions{})
	if err := step("service", err); err != nil {
		return 0, err
	}
	var storageClass *string
	if class != "" {
		storageClass = &class
	}
	_, err = core.PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: meta("shop-data"),
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: storageClass,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}, metav1.CreateOptions{})
	if err := step("claim", err); err != nil {
		return 0, err
	}
	_, err = core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-token", Namespace: ns, Labels: labels,
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "shop"}}, Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{})
	if err := step("service-account token secret", err); err != nil {
		return 0, err
	}
	pathType := networkingv1.PathTypePrefix
	_, err = kc.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: meta("shop-web"), Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "shop-web",
					Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}},
	}}, metav1.CreateOptions{})
	if err := step("ingress", err); err != nil {
		return 0, err
	}
	n, err := seedWidget(ctx, cfg, ns, labels)
	return created + n, err
}

// seedWidget defines the Widget CRD, waits until it is served, and creates
// one Widget.
func seedWidget(ctx context.Context, cfg *rest.Config, ns string, labels map[string]string) (int, error) {
	if err := DefineWidgets(ctx, cfg); err != nil {
		return 0, err
	}
	return createWidget(ctx, cfg, ns, labels)
}

// DefineWidgets defines the Widget CRD, unless it is, and waits until it
// is established.
func DefineWidgets(ctx context.Context, cfg *rest.Config) error {
	ext, err := apiext.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.demo.cairn.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "demo.cairn.io", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true)}}}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create widget CRD: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("widget CRD not established: %w", err)
	}
	return nil
}

func createWidget(ctx context.Context, cfg *rest.Config, ns string, labels map[string]string) (int, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.cairn.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "blue-widget", "namespace": ns, "labels": toAny(labels)},
		"spec":     map[string]any{"color": "blue", "size": 3},
		// The CRD has no status subresource, so the status is stored as sent.
		"status": map[string]any{"state": "ready"},
	}}
	// Retry briefly: a just-established CRD can take a moment to be served.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(WidgetResource).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	if err != nil {
		return 0, fmt.Errorf("create widget: %w", err)
	}
	// The widget owns its configuration: an owner/owned pair across types.
	owner, err := dyn.Resource(WidgetResource).Namespace(ns).Get(ctx, "blue-widget", metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read widget: %w", err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	_, err = kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "blue-widget-config", Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "demo.cairn.io/v1", Kind: "Widget", Name: owner.GetName(),
				UID: owner.GetUID(), Controller: ptr(true)}}},
		Data: map[string]string{"shade": "navy"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("create widget config: %w", err)
	}
	return 3, nil
}

func ptr[T any](v T) *T { return &v }

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
