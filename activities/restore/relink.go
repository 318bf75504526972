package restore

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// RelinkOwners adds the owner references that could not be set when their
// objects were created, now that every owner is restored. Adding a
// reference that is already there changes nothing, so a retry is safe.
func (a *Activities) RelinkOwners(ctx context.Context, in v1alpha1.RestoreStepInput) (*v1alpha1.StepResult, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	keys, err := run.Loc.Keys(ctx, run.Restore.Relinks())
	if err != nil {
		return nil, err
	}
	clients, err := actas.Clients(a.Clients, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	owners := newOwnerResolver(clients)
	res := &v1alpha1.StepResult{}
	var warnings []string
	for i, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var r relink
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("decode %s: %w", key, err)
			}
			warning, err := relinkOne(ctx, clients, owners, r)
			if err != nil {
				return err
			}
			if warning != "" {
				warnings = append(warnings, warning)
			} else {
				res.Done++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if err := run.Loc.WriteAll(ctx, run.Restore.Warnings("owners"), jsonLines(warnings)); err != nil {
		return nil, err
	}
	res.Warnings = len(warnings)
	run.Log.Info("Relinked owner references", zap.Int("linked", res.Done), zap.Int("warnings", res.Warnings))
	return res, nil
}

// relinkOne adds one owner reference; a warning says why it could not.
func relinkOne(ctx context.Context, clients *kube.Clients, owners *ownerResolver, r relink) (string, error) {
	what := fmt.Sprintf("%s %s/%s", r.Type.Kind, r.Namespace, r.Name)
	found, err := owners.lookup(ctx, r.Owner, r.Namespace)
	if err != nil {
		return "", err
	}
	if found == nil {
		return fmt.Sprintf("%s: its owner %s %s was not restored; the reference is dropped", what, r.Owner.Kind, r.Owner.Name), nil
	}
	ref := *found
	uid := ref.UID
	gvr := schema.GroupVersionResource{Group: r.Type.Group, Version: r.Type.Version, Resource: r.Type.Resource}
	client := clients.Dynamic.Resource(gvr).Namespace(r.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := client.Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		refs := obj.GetOwnerReferences()
		for _, have := range refs {
			if have.UID == uid {
				return nil
			}
		}
		obj.SetOwnerReferences(append(refs, ref))
		_, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return what + " is gone; its owner reference was not added", nil
	case err != nil && kube.IsUnreachable(err):
		return "", fmt.Errorf("add owner reference to %s: %w", what, err)
	case err != nil:
		return fmt.Sprintf("%s: adding its owner reference to %s %s failed: %v", what, r.Owner.Kind, r.Owner.Name, err), nil
	}
	return "", nil
}
