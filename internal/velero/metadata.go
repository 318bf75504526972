// Package velero reads the metadata Velero writes next to a backup
// (velero-backup.json) and turns it into cairn's view of a backup, so
// backups written by Velero into the same location are listed and restored.
package velero

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// APIVersion and Kind head every velero-backup.json.
const (
	APIVersion = "velero.io/v1"
	Kind       = "Backup"
)

// Backup is the part of Velero's Backup custom resource cairn uses.
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              BackupSpec   `json:"spec"`
	Status            BackupStatus `json:"status"`
}

// BackupSpec is what the Velero backup was asked to hold.
type BackupSpec struct {
	IncludedNamespaces      []string                `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces      []string                `json:"excludedNamespaces,omitempty"`
	IncludedResources       []string                `json:"includedResources,omitempty"`
	ExcludedResources       []string                `json:"excludedResources,omitempty"`
	LabelSelector           *metav1.LabelSelector   `json:"labelSelector,omitempty"`
	OrLabelSelectors        []*metav1.LabelSelector `json:"orLabelSelectors,omitempty"`
	TTL                     metav1.Duration         `json:"ttl,omitempty"`
	StorageLocation         string                  `json:"storageLocation,omitempty"`
	IncludeClusterResources *bool                   `json:"includeClusterResources,omitempty"`
}

// BackupStatus is how the Velero backup went.
type BackupStatus struct {
	Version             int             `json:"version,omitempty"`
	FormatVersion       string          `json:"formatVersion,omitempty"`
	Phase               string          `json:"phase,omitempty"`
	StartTimestamp      *metav1.Time    `json:"startTimestamp,omitempty"`
	CompletionTimestamp *metav1.Time    `json:"completionTimestamp,omitempty"`
	Expiration          *metav1.Time    `json:"expiration,omitempty"`
	Progress            *BackupProgress `json:"progress,omitempty"`
	Errors              int             `json:"errors,omitempty"`
	Warnings            int             `json:"warnings,omitempty"`
	FailureReason       string          `json:"failureReason,omitempty"`
	ValidationErrors    []string        `json:"validationErrors,omitempty"`
}

// BackupProgress counts the items of a Velero backup.
type BackupProgress struct {
	TotalItems    int `json:"totalItems,omitempty"`
	ItemsBackedUp int `json:"itemsBackedUp,omitempty"`
}

// Phases of a Velero backup that cairn treats specially; every other one
// is a backup still being written.
const (
	PhaseCompleted        = "Completed"
	PhasePartiallyFailed  = "PartiallyFailed"
	PhaseFailed           = "Failed"
	PhaseFailedValidation = "FailedValidation"
	PhaseDeleting         = "Deleting"
)

// Parse decodes velero-backup.json. It fails on anything that is not a
// velero.io/v1 Backup, and on label selectors that do not convert, so
// Metadata cannot fail afterwards.
func Parse(data []byte) (*Backup, error) {
	var b Backup
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("decode velero backup: %w", err)
	}
	if b.APIVersion != APIVersion || b.Kind != Kind {
		return nil, fmt.Errorf("not a Velero backup: apiVersion %q, kind %q (want %s %s)", b.APIVersion, b.Kind, APIVersion, Kind)
	}
	if b.Name == "" {
		return nil, errors.New("velero backup without metadata.name")
	}
	for _, sel := range append([]*metav1.LabelSelector{b.Spec.LabelSelector}, b.Spec.OrLabelSelectors...) {
		if _, err := selectorString(sel); err != nil {
			return nil, fmt.Errorf("velero backup %s: %w", b.Name, err)
		}
	}
	return &b, nil
}

// Metadata is cairn's view of the Velero backup. Velero's storageLocation
// names a BackupStorageLocation object, not a URL, so it is left out.
func (b *Backup) Metadata() v1alpha1.BackupMetadata {
	spec := v1alpha1.BackupSpec{
		Name:               b.Name,
		IncludedNamespaces: b.Spec.IncludedNamespaces,
		ExcludedNamespaces: b.Spec.ExcludedNamespaces,
		IncludedResources:  b.Spec.IncludedResources,
		ExcludedResources:  b.Spec.ExcludedResources,
		ClusterResources:   clusterResources(b.Spec.IncludeClusterResources),
	}
	spec.LabelSelector, _ = selectorString(b.Spec.LabelSelector)
	for _, sel := range b.Spec.OrLabelSelectors {
		if s, _ := selectorString(sel); s != "" {
			spec.OrLabelSelectors = append(spec.OrLabelSelectors, s)
		}
	}
	if b.Spec.TTL.Duration != 0 {
		ttl := b.Spec.TTL
		spec.TTL = &ttl
	}

	st := b.Status
	status := v1alpha1.BackupStatus{
		Name:           b.Name,
		StartTime:      timeOf(st.StartTimestamp),
		CompletionTime: timeOf(st.CompletionTimestamp),
		Expiration:     timeOf(st.Expiration),
		Errors:         st.Errors,
		Warnings:       st.Warnings,
	}
	status.Phase, status.FailureReason = phase(st)
	if st.Progress != nil {
		status.ItemsDone, status.ItemsEstimate = st.Progress.ItemsBackedUp, st.Progress.TotalItems
	}
	return v1alpha1.BackupMetadata{
		APIVersion:    v1alpha1.MetadataAPIVersion,
		Kind:          v1alpha1.MetadataKindBackup,
		Name:          b.Name,
		FormatVersion: st.FormatVersion,
		Format:        v1alpha1.BackupFormatVelero,
		Spec:          spec,
		Status:        status,
	}
}

// phase maps Velero's phase onto cairn's. Only Completed and
// PartiallyFailed backups are whole; a backup Velero is deleting may lose
// its tarball at any moment, so it is reported as failed.
func phase(st BackupStatus) (v1alpha1.Phase, string) {
	switch st.Phase {
	case PhaseCompleted:
		return v1alpha1.PhaseCompleted, ""
	case PhasePartiallyFailed:
		return v1alpha1.PhasePartiallyFailed, ""
	case PhaseFailed:
		return v1alpha1.PhaseFailed, st.FailureReason
	case PhaseFailedValidation:
		reason := "failed Velero's validation"
		if len(st.ValidationErrors) > 0 {
			reason = fmt.Sprintf("%s: %v", reason, st.ValidationErrors)
		}
		return v1alpha1.PhaseFailed, reason
	case PhaseDeleting:
		return v1alpha1.PhaseFailed, "being deleted by Velero"
	default:
		return v1alpha1.PhaseInProgress, ""
	}
}

func clusterResources(include *bool) v1alpha1.ClusterResources {
	switch {
	case include == nil:
		return v1alpha1.ClusterResourcesAuto
	case *include:
		return v1alpha1.ClusterResourcesInclude
	default:
		return v1alpha1.ClusterResourcesExclude
	}
}

// selectorString renders a label selector in the string form cairn's
// specs use; an absent selector is the empty string.
func selectorString(sel *metav1.LabelSelector) (string, error) {
	if sel == nil {
		return "", nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "", fmt.Errorf("label selector: %w", err)
	}
	return s.String(), nil
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
