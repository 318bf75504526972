package volume

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// uploadUntilCanceled is a data mover's task no data mover takes: it
// ends only when the workflow cancels it.
func uploadUntilCanceled(ctx context.Context, _ v1alpha1.UploadVolumeInput) (*v1alpha1.DataUploadInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestDataMoverWhoseImageCannotBePulledFailsAtOnce: the watcher finds
// the data mover's pod waiting on an image the node will not pull; the
// operation fails then, not at the prepare timeout, naming the image
// error, with no second data mover; the task no data mover took is
// canceled (else the run would wait for it).
func TestDataMoverWhoseImageCannotBePulledFailsAtOnce(t *testing.T) {
	env, req := moveDataEnv(t)
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(&v1alpha1.ExposeResult{DataMover: "pod cairn/x-1"}, nil).Once()
	env.OnActivity(exposeActs.WatchDataMoverStart, mock.Anything, mock.Anything).Return(&v1alpha1.StartWatchResult{
		Never: "data mover pod cairn/x-1 cannot start: container datamover waiting: ErrImageNeverPull image not present"}, nil).Once()
	// No data mover takes the task: the workflow cancels it, maybe
	// before the test's environment has started it.
	env.OnActivity(datamoverActs.UploadVolume, mock.Anything, mock.Anything).Return(uploadUntilCanceled).Maybe()
	env.OnActivity(exposeActs.DiagnoseExposure, mock.Anything, mock.Anything).Return(&v1alpha1.DiagnoseResult{}, nil).Never()
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, v1alpha1.OperationFailed, res.Phase)
	assert.Contains(t, res.Error, v1alpha1.ErrTypeDataMoverNotStarted)
	assert.Contains(t, res.Error, "the data mover of attempt 1 cannot start")
	assert.Contains(t, res.Error, "ErrImageNeverPull")
	assert.NotContains(t, res.Error, "within dataMoverPrepareTimeout", "it did not wait for the prepare timeout")
	env.AssertExpectations(t)
}

// TestDataMoverThatEndedBeforeStartingIsReplaced: the first data
// mover's pod ended before it took its task; a new attempt's data mover
// runs and moves the data.
func TestDataMoverThatEndedBeforeStartingIsReplaced(t *testing.T) {
	env, req := moveDataEnv(t)
	var exposed []int
	env.OnActivity(exposeActs.ExposeVolume, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
			exposed = append(exposed, in.Attempt)
			return &v1alpha1.ExposeResult{DataMover: "pod cairn/x", Node: "n1"}, nil
		}).Twice()
	env.OnActivity(exposeActs.WatchDataMoverStart, mock.Anything, mock.Anything).Return(&v1alpha1.StartWatchResult{
		Never: "data mover pod cairn/x-1 ended Failed: Evicted", Retry: true}, nil).Once()
	// The second data mover may finish before its watcher looks.
	env.OnActivity(exposeActs.WatchDataMoverStart, mock.Anything, mock.Anything).Return(&v1alpha1.StartWatchResult{Running: true}, nil).Maybe()
	// The first attempt's task waits for a data mover that never comes
	// (and may be canceled before it is started); the second one's runs.
	env.OnActivity(datamoverActs.UploadVolume, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in v1alpha1.UploadVolumeInput) (*v1alpha1.DataUploadInfo, error) {
			if exposed[len(exposed)-1] == 1 {
				return uploadUntilCanceled(ctx, in)
			}
			return &v1alpha1.DataUploadInfo{SnapshotID: "k1", Bytes: 10}, nil
		})
	env.OnActivity(csiActs.RemoveVolumeSnapshot, mock.Anything, mock.Anything).Return(nil).Once()

	res := runVolume(t, env, req)
	assert.Equal(t, v1alpha1.OperationCompleted, res.Phase, res.Error)
	require.NotNil(t, res.Upload)
	assert.Equal(t, 2, res.Upload.Attempts)
	assert.Equal(t, []int{1, 2}, exposed)
	env.AssertExpectations(t)
}
