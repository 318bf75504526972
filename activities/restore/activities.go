// Package restore holds the activities of a restore: plan (read the
// backup, choose versions for the target cluster, write prepared items in
// batches), apply (create or update one resource type, batch by batch),
// wait for restored CRDs, relink owner references, finalize and clean up.
package restore

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// Activities holds what the restore activities share.
type Activities struct {
	Clients *kube.Clients
	Log     *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// BatchInterval is a pause after every applied batch, to spare a busy
	// API server at the cost of a longer restore (0: no pause).
	BatchInterval time.Duration
	// TarballLimits bound what a restore reads of a backup's tarball (zero:
	// the defaults).
	TarballLimits tarball.Limits
	// ConfigNamespace is the worker's namespace, where Velero's
	// change-storage-class ConfigMaps are read from ("": none are).
	ConfigNamespace string
	// Registered are the extensions a restore planned now calls; its
	// plan keeps them. Extensions makes the calls, Operations runs the
	// operations they start.
	Registered []v1alpha1.Extension
	Extensions extcall.Caller
	Operations extcall.Operator
	// RestoreWait is the init container that holds a restored pod until
	// its volumes' copies are written back.
	RestoreWait RestoreWait
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespaceExists says with the worker's own rights whether a namespace
// exists; it is all the worker reads for a restore acting as its caller.
func (a *Activities) namespaceExists(ctx context.Context, name string) (bool, error) {
	_, err := a.Clients.Dynamic.Resource(namespacesGVR).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("does namespace %s exist: %w", name, err)
}

// Item is one line of a batch: an object prepared for the target cluster
// and what the apply step needs to know about it.
type Item struct {
	Object map[string]any `json:"object"`
	// RestoredOwners are the UIDs (in the backup) of owners restored in
	// this run; references to other owners are kept only if they exist.
	RestoredOwners []string `json:"restoredOwners,omitempty"`
	// SourceNamespace is the backed-up namespace when it was mapped.
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	// Modifiers are the resource modifier rules that changed the object.
	Modifiers []string `json:"modifiers,omitempty"`
	// EnsureOnly marks a namespace the restore needs but the backup does
	// not hold: created when missing, fine as it is when present.
	EnsureOnly bool `json:"ensureOnly,omitempty"`
	// CreateOnly marks a workload's related cluster-scoped object: created
	// when missing, never changed; one that differs is skipped with a
	// warning.
	CreateOnly bool `json:"createOnly,omitempty"`
}
