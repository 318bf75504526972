package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Backup is a backup as a Kubernetes resource: creating one starts the
// backup of that name, and its status follows the run. Deleting it deletes
// the backup's data, unless it carries the annotation cairn.io/keep-data.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=cairn
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.items`
// +kubebuilder:printcolumn:name="Errors",type=integer,JSONPath=`.status.errors`
// +kubebuilder:printcolumn:name="Warnings",type=integer,JSONPath=`.status.warnings`,priority=1
// +kubebuilder:printcolumn:name="Run",type=string,JSONPath=`.status.runName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.name) || size(self.spec.name) == 0 || self.spec.name == self.metadata.name",message="spec.name, when set, must be the resource's name"
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a backup's spec cannot change once created"
	Spec   BackupSpec     `json:"spec"`
	Status ResourceStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
//
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

// ResourceStatus is what kubectl shows of a Backup's or Restore's run. It
// is written when the run starts and when it ends, and stays this small
// whatever the run holds: the run's own status, per type and per volume,
// is in the Temporal UI and `cairn backup get`.
//
// +kubebuilder:object:generate=true
type ResourceStatus struct {
	// Phase is the run's: New until it starts, then InProgress, then
	// Completed, PartiallyFailed, Failed or Canceled.
	Phase Phase `json:"phase,omitempty"`
	// RunName is the run's name in cairn (the CLI, the API, the
	// location): the resource's name in cairn's own namespace, and
	// <namespace>.<name> in any other.
	RunName string `json:"runName,omitempty"`
	// WorkflowID is the Temporal workflow of the run.
	WorkflowID string `json:"workflowID,omitempty"`
	// ActingAs is whom the run reads and writes the cluster as.
	ActingAs string `json:"actingAs,omitempty"`
	// Items are the objects backed up or restored.
	Items    int `json:"items,omitempty"`
	Errors   int `json:"errors,omitempty"`
	Warnings int `json:"warnings,omitempty"`
	// Message says why the run failed or was refused.
	Message        string       `json:"message,omitempty"`
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// ObservedGeneration is the generation of the spec the run was started
	// from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RunStatus is the status of the Backup's run, for code that follows
// Backups and Restores alike.
func (b *Backup) RunStatus() *ResourceStatus { return &b.Status }
