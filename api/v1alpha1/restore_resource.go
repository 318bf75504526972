package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Restore is a restore as a Kubernetes resource: creating one starts the
// restore of that name, and its status follows the run. Deleting it
// leaves what the restore wrote in place.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=cairn
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backupName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.items`
// +kubebuilder:printcolumn:name="Errors",type=integer,JSONPath=`.status.errors`
// +kubebuilder:printcolumn:name="Warnings",type=integer,JSONPath=`.status.warnings`,priority=1
// +kubebuilder:printcolumn:name="Run",type=string,JSONPath=`.status.runName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.name) || size(self.spec.name) == 0 || self.spec.name == self.metadata.name",message="spec.name, when set, must be the resource's name"
type Restore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a restore's spec cannot change once created"
	Spec   RestoreSpec    `json:"spec"`
	Status ResourceStatus `json:"status,omitempty"`
}

// RestoreList is a list of Restores.
//
// +kubebuilder:object:root=true
type RestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Restore `json:"items"`
}

// RunStatus is the status of the Restore's run.
func (r *Restore) RunStatus() *ResourceStatus { return &r.Status }
