package backup

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// A backup started with options out of bounds, past the starter, fails
// for good before it does anything.
func TestBackupRefusesOptionsOutOfBounds(t *testing.T) {
	env := newBackupEnv(t)
	env.ExecuteWorkflow(BackupWorkflow, v1alpha1.BackupRequest{Spec: v1alpha1.BackupSpec{Name: "b"}, Options: v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{}}})
	require.True(t, env.IsWorkflowCompleted())
	flowtest.RequireInvalidOptions(t, env.GetWorkflowError(), "options.heartbeatTimeout 0s")

}
