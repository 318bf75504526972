package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/runlog"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// WaitCRDsEstablished waits until every CRD of the restore serves its
// resources, so the custom resources that follow can be created. A CRD
// that is not Established in time is a warning: its resources then fail
// one by one, with the server's reason.
func (a *Activities) WaitCRDsEstablished(ctx context.Context, in v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	names, err := crdNamesOf(ctx, run)
	if err != nil {
		return nil, err
	}
	clients, err := actas.Clients(a.Clients, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(in.Options.WithDefaults().CRDEstablishTimeout.Duration)
	pending := names
	var warnings []string
	unread := 0
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []string
		for _, name := range pending {
			ok, err := established(ctx, clients, name)
			if apierrors.IsForbidden(err) {
				warnings = append(warnings, fmt.Sprintf("CustomResourceDefinition %s: not waited for, it may not be read (%v)", name, err))
				unread++
				continue
			}
			if err != nil {
				return nil, err
			}
			if !ok {
				still = append(still, name)
			}
		}
		pending = still
		activity.RecordHeartbeat(ctx, len(names)-len(pending)-unread)
		if len(pending) > 0 {
			if err := clock.Sleep(ctx, 500*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range pending {
		warnings = append(warnings, fmt.Sprintf("CustomResourceDefinition %s was not Established within %s; its resources may fail", name,
			in.Options.WithDefaults().CRDEstablishTimeout.Duration))
	}
	if err := run.Loc.WriteAll(ctx, run.Restore.Warnings("crds"), jsonLines(warnings)); err != nil {
		return nil, err
	}
	run.Log.Info("CRDs established", zap.Int("established", len(names)-len(pending)-unread), zap.Strings("notEstablished", pending),
		zap.Int("unreadable", unread))
	return &v1alpha1.StepResult{Done: len(names) - len(pending) - unread, Warnings: len(warnings)}, nil
}

func established(ctx context.Context, clients *kube.Clients, name string) (bool, error) {
	crd, err := clients.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil // it failed to restore; the wait runs out
	}
	if err != nil {
		return false, fmt.Errorf("get CRD %s: %w", name, err)
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true, nil
		}
	}
	return false, nil
}

// crdNamesOf reads the names of the CRDs in the restore's batches.
func crdNamesOf(ctx context.Context, run *runlog.Run) ([]string, error) {
	keys, err := run.Loc.Keys(ctx, run.Restore.Batches()+crdResource+"/")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var it Item
			if err := json.Unmarshal(line, &it); err != nil {
				return fmt.Errorf("decode %s: %w", key, err)
			}
			names = append(names, (&unstructured.Unstructured{Object: it.Object}).GetName())
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}
