// +groupName=cairn.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of cairn's Kubernetes resources.
var GroupVersion = schema.GroupVersion{Group: APIGroup, Version: "v1alpha1"}

// AddToScheme registers the resources with a scheme, for clients that read
// and write them typed.
var (
	schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Backup{}, &BackupList{}, &Restore{}, &RestoreList{}, &Schedule{}, &ScheduleList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
	AddToScheme = schemeBuilder.AddToScheme
)
