package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// pauseNote is the note of a pause or unpause the resource asked for.
const pauseNote = "spec.paused of the Schedule resource"

// scheduleReconciler keeps a Temporal Schedule in step with a Schedule
// resource, and the resource's status with the schedule: after a spec
// change, and once after each due time.
type scheduleReconciler struct {
	kube    client.Client
	runs    runs
	tenancy tenancy
	log     *zap.Logger
	now     func() time.Time
}

func (r *scheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sc := &v1alpha1.Schedule{}
	if err := r.kube.Get(ctx, req.NamespacedName, sc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := r.log.With(zap.String("schedule", req.String()))
	if !sc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteSchedule(ctx, log, sc)
	}
	if !controllerutil.ContainsFinalizer(sc, v1alpha1.FinalizerDeleteSchedule) {
		if err := patchMetadata(ctx, r.kube, sc, func() { controllerutil.AddFinalizer(sc, v1alpha1.FinalizerDeleteSchedule) }); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to schedule %s: %w", req, err)
		}
	}
	status := sc.Status
	id, refusal, err := r.tenancy.actingAs(ctx, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if refusal != "" {
		log.Info("Refused", zap.String("reason", refusal))
		status.Message, status.ObservedGeneration = refusal, sc.Generation
		return ctrl.Result{}, r.writeStatus(ctx, sc, status)
	}
	name := r.tenancy.runName(sc)
	ctx = r.tenancy.runContext(ctx, sc, id)
	var v *starter.ScheduleView
	if sc.Status.ObservedGeneration != sc.Generation {
		v, err = r.apply(ctx, log, sc)
		if refusedByStarter(err) {
			log.Info("Schedule refused", zap.Error(err))
			status.Message, status.ObservedGeneration = err.Error(), sc.Generation
			return ctrl.Result{}, r.writeStatus(ctx, sc, status)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	if v == nil {
		v, err = r.runs.GetSchedule(ctx, name)
	}
	if errors.Is(err, starter.ErrNotFound) {
		if sc.Status.ScheduleID == "" {
			return ctrl.Result{}, nil // refused: it stays so until the spec changes
		}
		log.Info("Schedule gone behind the resource's back; making it again")
		if _, err := r.apply(ctx, log, sc); err != nil {
			return ctrl.Result{}, err
		}
		v, err = r.runs.GetSchedule(ctx, name)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("status of schedule %s: %w", name, err)
	}
	if err := r.writeStatus(ctx, sc, scheduleStatus(v, id, sc.Generation)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.untilAfterNextRun(v, sc.CreationTimestamp.Time)}, nil
}

// apply brings the schedule of the resource's name to its spec, paused or
// not as the spec says, or creates it. It returns the schedule as it now
// stands when the last call told it (nil after a create).
func (r *scheduleReconciler) apply(ctx context.Context, log *zap.Logger, sc *v1alpha1.Schedule) (*starter.ScheduleView, error) {
	spec := sc.Spec
	spec.Name = sc.Name
	if r.tenancy.isTeams(sc) {
		spec = sc.ScopedToNamespace()
	}
	v, err := r.runs.UpdateSchedule(ctx, spec.Name, spec)
	if errors.Is(err, starter.ErrNotFound) {
		res, err := r.runs.CreateSchedule(ctx, spec)
		if err != nil {
			return nil, err
		}
		log.Info("Schedule created", zap.String("scheduleID", res.WorkflowID), zap.Bool("paused", spec.Paused))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch {
	case spec.Paused && !v.Paused:
		v, err = r.runs.PauseSchedule(ctx, spec.Name, pauseNote)
	case !spec.Paused && v.Paused:
		v, err = r.runs.UnpauseSchedule(ctx, spec.Name, pauseNote)
	}
	if err != nil {
		return nil, err
	}
	log.Info("Schedule updated", zap.Int64("generation", sc.Generation), zap.Bool("paused", spec.Paused))
	return v, nil
}

// untilAfterNextRun is when the status is next worth refreshing: a
// minute after the next due time (none while paused). Temporal computes a
// new schedule's due times in a task of its own, so a describe right after
// the create may have none yet: a young schedule (by the later of its and
// its resource's creation) without them is asked again shortly.
func (r *scheduleReconciler) untilAfterNextRun(v *starter.ScheduleView, resourceCreated time.Time) time.Duration {
	if v.Paused {
		return 0
	}
	if len(v.NextRuns) == 0 {
		created := v.CreatedAt
		if resourceCreated.After(created) {
			created = resourceCreated
		}
		if r.now().Sub(created) < dueTimesPending {
			return time.Second
		}
		return 0
	}
	return max(v.NextRuns[0].Sub(r.now())+time.Minute, time.Minute)
}

// dueTimesPending is how long after its creation a schedule without due
// times is taken to be waiting for Temporal to compute them.
const dueTimesPending = time.Minute

func scheduleStatus(v *starter.ScheduleView, id *v1alpha1.Identity, generation int64) v1alpha1.ScheduleResourceStatus {
	s := v1alpha1.ScheduleResourceStatus{ScheduleID: v1alpha1.ScheduleID(v.Name), Paused: v.Paused, Health: v.Health.State,
		Message: strings.Join(v.Health.Reasons, "; "), LastSuccess: metaTime(v.LastSuccess),
		ActingAs: id.Describe(), ObservedGeneration: generation}
	if len(v.NextRuns) > 0 && !v.Paused {
		s.NextRun = &metav1.Time{Time: v.NextRuns[0]}
	}
	return s
}

// deleteSchedule deletes the Temporal Schedule and releases the resource;
// the schedule's backups stay.
func (r *scheduleReconciler) deleteSchedule(ctx context.Context, log *zap.Logger, sc *v1alpha1.Schedule) error {
	if !controllerutil.ContainsFinalizer(sc, v1alpha1.FinalizerDeleteSchedule) {
		return nil
	}
	// Only this resource makes the schedule of its run name, so it is
	// deleted even when no status recorded it (a crash in between).
	name := r.tenancy.runName(sc)
	if _, err := r.runs.DeleteSchedule(ctx, name); err != nil && !errors.Is(err, starter.ErrNotFound) {
		return fmt.Errorf("delete schedule %s: %w", name, err)
	}
	log.Info("Schedule deleted; its backups stay")
	if err := patchMetadata(ctx, r.kube, sc, func() { controllerutil.RemoveFinalizer(sc, v1alpha1.FinalizerDeleteSchedule) }); err != nil {
		return fmt.Errorf("release schedule %s: %w", sc.Name, err)
	}
	return nil
}

func (r *scheduleReconciler) writeStatus(ctx context.Context, sc *v1alpha1.Schedule, s v1alpha1.ScheduleResourceStatus) error {
	if equality.Semantic.DeepEqual(s, sc.Status) {
		return nil
	}
	sc.Status = s
	if err := r.kube.Status().Update(ctx, sc); err != nil {
		return fmt.Errorf("status of schedule %s: %w", sc.Name, err)
	}
	return nil
}
