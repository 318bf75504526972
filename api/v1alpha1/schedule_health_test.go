package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestScheduleHealth(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	base := ScheduleHealthInput{Now: now, Interval: time.Hour, MaxRunDuration: 30 * time.Minute, Created: now.Add(-48 * time.Hour)}

	in := base
	in.LastSuccess = ago(80 * time.Minute)
	assert.Equal(t, HealthHealthy, EvaluateScheduleHealth(in).State, "within interval plus grace")

	in.LastSuccess = ago(100 * time.Minute)
	h := EvaluateScheduleHealth(in)
	assert.Equal(t, HealthDegraded, h.State)
	assert.Contains(t, h.Reasons[0], "older than interval 1h0m0s plus grace 30m0s")

	in.Paused = true
	assert.Equal(t, HealthHealthy, EvaluateScheduleHealth(in).State, "a paused schedule is not overdue")

	in = base
	in.LastSuccess = ago(10 * time.Minute)
	in.Running = []RunningRun{{Name: "s-1", Start: now.Add(-31 * time.Minute)}}
	h = EvaluateScheduleHealth(in)
	assert.Equal(t, HealthDegraded, h.State)
	assert.Contains(t, h.Reasons[0], "backup s-1 has run for 31m0s, longer than maxRunDuration 30m0s")

	in = base
	h = EvaluateScheduleHealth(in)
	assert.Equal(t, HealthDegraded, h.State, "never succeeded in two days")
	assert.Contains(t, h.Reasons[0], "no completed backup since the schedule was created")

	in.MaxRunDuration = 0
	in.Created = now.Add(-90 * time.Minute)
	assert.Equal(t, HealthHealthy, EvaluateScheduleHealth(in).State, "without a max, the grace is one more interval")
}
