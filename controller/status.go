package controller

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// refusedByStarter reports whether err is the starter refusing a request
// for good: a retry of the same spec would be refused again, so the
// resource fails with the reason instead of being retried.
func refusedByStarter(err error) bool {
	var invalid *starter.InvalidError
	var conflict *starter.ConflictError
	return errors.As(err, &invalid) || errors.As(err, &conflict) || errors.Is(err, starter.ErrNotFound)
}

// refused is the status of a resource whose run may not start.
func refused(s v1alpha1.ResourceStatus, generation int64, message string, now time.Time) v1alpha1.ResourceStatus {
	s.Phase = v1alpha1.PhaseFailed
	s.Message = message
	s.ObservedGeneration = generation
	s.CompletionTime = &metav1.Time{Time: now}
	return s
}

// started is the status of a resource whose run has just started.
func started(s v1alpha1.ResourceStatus, generation int64, res *starter.CreateResult, id *v1alpha1.Identity, now time.Time) v1alpha1.ResourceStatus {
	s.Phase = v1alpha1.PhaseInProgress
	s.RunName = res.Name
	s.WorkflowID = res.WorkflowID
	s.ActingAs = id.Describe()
	s.ObservedGeneration = generation
	s.StartTime = &metav1.Time{Time: now}
	return s
}

// runCounts are the items a run backed up or restored, those that
// failed, and its warnings.
type runCounts struct{ items, errors, warnings int }

// ended is the status of a resource whose run ended in phase.
func ended(s v1alpha1.ResourceStatus, phase v1alpha1.Phase, n runCounts, reason string, completed, closed *time.Time) v1alpha1.ResourceStatus {
	s.Phase = phase
	s.Items, s.Errors, s.Warnings, s.Message = n.items, n.errors, n.warnings, reason
	if completed == nil {
		completed = closed
	}
	s.CompletionTime = metaTime(completed)
	return s
}

func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: *t}
}
