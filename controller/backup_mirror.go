package controller

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/starter"
)

// backupMirror makes every backup cairn knows of visible as a Backup
// resource, whichever door started it: a backup of a namespace's
// resource (<namespace>.<name>) in that namespace, any other in cairn's.
// It reads the list the API serves (Temporal's runs and the locations'
// backups) once per interval, creates what is missing and marks Deleted
// what is gone; it never deletes a resource, so a wrong list costs no
// data. A mirrored resource is one object in etcd per backup, its status
// as small as any Backup's.
type backupMirror struct {
	kube     client.Client
	runs     runs
	tenancy  tenancy
	interval time.Duration
	log      *zap.Logger
}

// NeedLeaderElection: one replica mirrors, the one that reconciles.
func (m *backupMirror) NeedLeaderElection() bool { return true }

func (m *backupMirror) Start(ctx context.Context) error {
	for {
		if err := m.sync(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("Backup mirror: will try again", zap.Error(err), zap.Duration("in", m.interval))
		}
		if clock.Sleep(ctx, m.interval) != nil {
			return nil
		}
	}
}

func (m *backupMirror) sync(ctx context.Context) error {
	list, err := m.runs.ListBackups(ctx)
	if err != nil {
		return fmt.Errorf("list backups: %w", err)
	}
	var resources v1alpha1.BackupList
	if err := m.kube.List(ctx, &resources); err != nil {
		return fmt.Errorf("list Backup resources: %w", err)
	}
	byRun := make(map[string]*v1alpha1.Backup, len(resources.Items))
	for i := range resources.Items {
		byRun[m.tenancy.runName(&resources.Items[i])] = &resources.Items[i]
	}
	listed := make(map[string]bool, len(list.Items))
	for _, v := range list.Items {
		listed[v.Name] = true
		b, ok := byRun[v.Name]
		switch {
		case !ok && v.Phase != v1alpha1.PhaseDeleted:
			if err := m.create(ctx, v); err != nil {
				return err
			}
		case ok && followsTheList(b) && !equality.Semantic.DeepEqual(b.Status, mirroredStatus(v)):
			if err := m.writeStatus(ctx, b, mirroredStatus(v)); err != nil {
				return err
			}
		case ok && v.Phase == v1alpha1.PhaseDeleted && b.Status.Phase.Done() && b.Status.Phase != v1alpha1.PhaseDeleted:
			if err := m.markDeleted(ctx, b, "the backup's data was deleted (its TTL, or a delete through the API or the CLI)"); err != nil {
				return err
			}
		}
	}
	if len(list.Unreadable) > 0 {
		return nil // a location unread: what it holds is unknown, not gone
	}
	for run, b := range byRun {
		if !listed[run] && b.Status.Phase.Done() && b.Status.Phase != v1alpha1.PhaseDeleted && b.Status.Phase != v1alpha1.PhaseFailed {
			if err := m.markDeleted(ctx, b, "the backup is no longer in its location"); err != nil {
				return err
			}
		}
	}
	return nil
}

// create makes the resource of v: in its namespace when it is a
// namespace's backup and the namespace exists, else in cairn's.
func (m *backupMirror) create(ctx context.Context, v *starter.BackupView) error {
	ns, name := m.tenancy.namespace, v.Name
	if team, local, ok := v1alpha1.SplitRunName(v.Name); ok {
		ns, name = team, local
	}
	b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Annotations: map[string]string{v1alpha1.AnnotationMirrored: v.Source}, Finalizers: []string{v1alpha1.FinalizerDeleteData}}}
	if v.Spec != nil {
		b.Spec = *v.Spec
		b.Spec.Name = "" // the run's name, which a namespace's resource does not bear
	}
	err := m.kube.Create(ctx, b)
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
		// the namespace is gone, or a resource of that name is of another run
		m.log.Info("Backup not mirrored", zap.String("backup", v.Name), zap.Error(err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("mirror backup %s: %w", v.Name, err)
	}
	m.log.Info("Backup mirrored", zap.String("backup", v.Name), zap.String("resource", ns+"/"+name), zap.String("from", v.Source))
	return m.writeStatus(ctx, b, mirroredStatus(v))
}

// followsTheList: a mirrored resource whose status the list keeps
// current: one an earlier sync created but did not finish, or a backup
// without a run to follow (one being written by another tool).
func followsTheList(b *v1alpha1.Backup) bool {
	return b.Annotations[v1alpha1.AnnotationMirrored] != "" && b.Status.WorkflowID == "" && !b.Status.Phase.Done()
}

// mirroredStatus is the status of a backup the controller did not start.
func mirroredStatus(v *starter.BackupView) v1alpha1.ResourceStatus {
	s := backupOutcome(v1alpha1.ResourceStatus{RunName: v.Name, WorkflowID: v.WorkflowID, ActingAs: v.ActingAs.Describe(),
		StartTime: metaTime(v.StartTime), ObservedGeneration: 1}, v)
	if s.Phase == "" {
		s.Phase = v1alpha1.PhaseNew
	}
	if v.Source == starter.SourceLocation && v.ActingAs == nil {
		s.ActingAs = "" // found in a location: who ran it is not recorded there
	}
	return s
}

func (m *backupMirror) markDeleted(ctx context.Context, b *v1alpha1.Backup, why string) error {
	s := b.Status
	s.Phase, s.Message = v1alpha1.PhaseDeleted, why
	m.log.Info("Backup gone", zap.String("resource", b.Namespace+"/"+b.Name), zap.String("reason", why))
	return m.writeStatus(ctx, b, s)
}

func (m *backupMirror) writeStatus(ctx context.Context, b *v1alpha1.Backup, s v1alpha1.ResourceStatus) error {
	b.Status = s
	if err := m.kube.Status().Update(ctx, b); err != nil {
		return fmt.Errorf("status of %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}
