package starter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
)

// A schedule Temporal still lists but has deleted (its list is eventually
// consistent) is left out, instead of failing the whole list and the
// schedule metrics with it.
func TestListSchedulesSkipsAScheduleDeletedSinceListed(t *testing.T) {
	tc := mocks.NewClient(t)
	sc := mocks.NewScheduleClient(t)
	it := mocks.NewScheduleListIterator(t)
	handle := mocks.NewScheduleHandle(t)
	tc.On("ScheduleClient").Return(sc)
	sc.On("List", mock.Anything, mock.Anything).Return(it, nil)
	it.On("HasNext").Return(true).Once()
	it.On("Next").Return(&client.ScheduleListEntry{ID: "schedule/gone"}, nil).Once()
	it.On("HasNext").Return(false)
	sc.On("GetHandle", mock.Anything, "schedule/gone").Return(handle)
	handle.On("Describe", mock.Anything).Return(nil, serviceerror.NewNotFound("schedule not found"))

	list, err := New(tc, Options{}).ListSchedules(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}
