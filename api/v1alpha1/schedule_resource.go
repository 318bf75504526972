package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Schedule is a backup schedule as a Kubernetes resource, kept in step
// with the Temporal Schedule of its name: creating, changing, pausing
// (spec.paused) and deleting the resource do the same to the schedule.
// Deleting it leaves the backups it made, to expire by their TTL.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=cairn
// +kubebuilder:printcolumn:name="Cron",type=string,JSONPath=`.spec.cron`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.status.paused`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Last success",type=date,JSONPath=`.status.lastSuccess`
// +kubebuilder:printcolumn:name="Next run",type=string,JSONPath=`.status.nextRun`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.name) || size(self.spec.name) == 0 || self.spec.name == self.metadata.name",message="spec.name, when set, must be the resource's name"
type Schedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ScheduleSpec           `json:"spec"`
	Status ScheduleResourceStatus `json:"status,omitempty"`
}

// ScheduleList is a list of Schedules.
//
// +kubebuilder:object:root=true
type ScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Schedule `json:"items"`
}

// ScheduleResourceStatus is what kubectl shows of a Schedule: refreshed
// when the spec changes and after each due time, never written back into
// the spec, so a manifest applied by a GitOps tool stays as written.
//
// +kubebuilder:object:generate=true
type ScheduleResourceStatus struct {
	// ScheduleID is the Temporal Schedule kept in step with the resource.
	ScheduleID string `json:"scheduleID,omitempty"`
	Paused     bool   `json:"paused,omitempty"`
	// Health is Healthy or Degraded; Message says why when Degraded, or
	// why the schedule could not be made.
	Health      string       `json:"health,omitempty"`
	Message     string       `json:"message,omitempty"`
	LastSuccess *metav1.Time `json:"lastSuccess,omitempty"`
	NextRun     *metav1.Time `json:"nextRun,omitempty"`
	// ActingAs is whom the schedule's runs read the cluster as.
	ActingAs string `json:"actingAs,omitempty"`
	// ObservedGeneration is the generation of the spec the schedule has.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}
