package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/starter"
)

func TestScheduleStatusRefreshedUntilItHasDueTimes(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	r := &scheduleReconciler{now: func() time.Time { return now }}
	justMade := &starter.ScheduleView{CreatedAt: now.Add(-200 * time.Millisecond)}
	assert.Equal(t, time.Second, r.untilAfterNextRun(justMade, now.Add(-time.Second)),
		"Temporal has not computed a new schedule's due times yet: ask again shortly")
	assert.Equal(t, time.Second, r.untilAfterNextRun(&starter.ScheduleView{}, now.Add(-time.Second)),
		"a describe without a creation time counts from the resource's")

	old := &starter.ScheduleView{CreatedAt: now.Add(-time.Hour)}
	assert.Zero(t, r.untilAfterNextRun(old, now.Add(-time.Hour)), "an old schedule without due times has none to wait for")
	assert.Zero(t, r.untilAfterNextRun(&starter.ScheduleView{CreatedAt: now, Paused: true}, now), "a paused schedule runs nothing")

	due := &starter.ScheduleView{CreatedAt: now, NextRuns: []time.Time{now.Add(2 * time.Hour)}}
	assert.Equal(t, 2*time.Hour+time.Minute, r.untilAfterNextRun(due, now), "a minute after the next due time")
}
