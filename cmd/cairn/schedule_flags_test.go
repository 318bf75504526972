package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func parsedScheduleCommand(t *testing.T, args ...string) (*cobra.Command, *scheduleFlags) {
	sf := &scheduleFlags{}
	cmd := &cobra.Command{Use: "x"}
	sf.register(cmd.Flags())
	require.NoError(t, cmd.Flags().Parse(args))
	return cmd, sf
}

func TestScheduleCreateFlagsFillTheSpec(t *testing.T) {
	cmd, sf := parsedScheduleCommand(t, "--cron", "0 2 * * *", "--time-zone", "Europe/Berlin", "--keep-last", "7",
		"--max-run-duration", "1h", "--include-namespaces", "shop,web", "--ttl", "48h", "--overlap", "buffer-one")
	require.NoError(t, sf.apply(cmd.Flags().Changed))
	s := sf.spec
	assert.Equal(t, "0 2 * * *", s.Cron)
	assert.Equal(t, "Europe/Berlin", s.TimeZone)
	assert.Equal(t, 7, *s.Retention.KeepLast)
	assert.Nil(t, s.Retention.KeepFailed, "left to the default")
	assert.Equal(t, time.Hour, s.MaxRunDuration.Duration)
	assert.Equal(t, []string{"shop", "web"}, s.Template.IncludedNamespaces)
	assert.Equal(t, 48*time.Hour, s.Template.TTL.Duration)
	assert.Equal(t, v1alpha1.OverlapBufferOne, s.Overlap)
	assert.Equal(t, v1alpha1.ClusterResourcesAuto, s.Template.ClusterResources)
	assert.Nil(t, s.Every)
}

// TestScheduleUpdateOverlaysOnlyTheGivenFlags: an update changes what its
// flags name; one retention kind replaces another; the rest stays.
func TestScheduleUpdateOverlaysOnlyTheGivenFlags(t *testing.T) {
	keep := 3
	base := v1alpha1.ScheduleSpec{
		Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Overlap: v1alpha1.OverlapAllowAll,
		Retention: v1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: time.Hour}, KeepFailed: &keep},
		Template:  v1alpha1.BackupSpec{IncludedNamespaces: []string{"shop"}, ClusterResources: v1alpha1.ClusterResourcesExclude},
	}
	cmd, _ := parsedScheduleCommand(t, "--keep-last", "14", "--exclude-namespaces", "kube-system")
	got, err := overlay(cmd, base)
	require.NoError(t, err)
	assert.Equal(t, 14, *got.Retention.KeepLast)
	assert.Nil(t, got.Retention.MaxAge, "keep-last replaced max-age")
	assert.Equal(t, 3, *got.Retention.KeepFailed)
	assert.Equal(t, "0 2 * * *", got.Cron)
	assert.Equal(t, "Europe/Berlin", got.TimeZone)
	assert.Equal(t, v1alpha1.OverlapAllowAll, got.Overlap)
	assert.Equal(t, []string{"shop"}, got.Template.IncludedNamespaces)
	assert.Equal(t, []string{"kube-system"}, got.Template.ExcludedNamespaces)
	assert.Equal(t, v1alpha1.ClusterResourcesExclude, got.Template.ClusterResources)

	cmd, _ = parsedScheduleCommand(t, "--every", "30m")
	got, err = overlay(cmd, base)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Minute, got.Every.Duration)
	assert.Empty(t, got.Cron)
	assert.Empty(t, got.TimeZone)
}

// The calendar rules go with --keep-last; an update changes the rules it
// names, and another kind replaces them all.
func TestScheduleCalendarRetentionFlags(t *testing.T) {
	cmd, sf := parsedScheduleCommand(t, "--cron", "@hourly", "--keep-last", "2", "--keep-daily", "7", "--keep-monthly", "12")
	require.NoError(t, sf.apply(cmd.Flags().Changed))
	r := sf.spec.Retention
	assert.Equal(t, 2, *r.KeepLast)
	assert.Equal(t, 7, r.KeepDaily)
	assert.Equal(t, 12, r.KeepMonthly)
	assert.Zero(t, r.KeepWeekly)
	one := 1
	r.KeepFailed = &one
	assert.Equal(t, "keep last 2, 7 daily, 12 monthly, 1 failed", retention(r))

	base := sf.spec
	cmd, _ = parsedScheduleCommand(t, "--keep-daily", "0", "--keep-weekly", "4")
	got, err := overlay(cmd, base)
	require.NoError(t, err)
	assert.Equal(t, 2, *got.Retention.KeepLast, "kept")
	assert.Equal(t, 12, got.Retention.KeepMonthly, "kept")
	assert.Zero(t, got.Retention.KeepDaily, "0 turns a rule off")
	assert.Equal(t, 4, got.Retention.KeepWeekly)

	cmd, _ = parsedScheduleCommand(t, "--max-age", "48h")
	got, err = overlay(cmd, base)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: 48 * time.Hour}}, got.Retention, "max-age replaced every count rule")

	cmd, sf = parsedScheduleCommand(t, "--every", "1h", "--keep-weekly", "3", "--max-total-size", "1Gi")
	var usage *usageError
	assert.ErrorAs(t, sf.apply(cmd.Flags().Changed), &usage, "a calendar rule is a count: not with a size")
}

func TestScheduleFlagsRefuseTwoRetentionKinds(t *testing.T) {
	cmd, sf := parsedScheduleCommand(t, "--every", "1h", "--keep-last", "3", "--max-age", "1h")
	var usage *usageError
	assert.ErrorAs(t, sf.apply(cmd.Flags().Changed), &usage)
	cmd, sf = parsedScheduleCommand(t, "--every", "1h", "--cron", "@daily", "--keep-last", "3")
	assert.ErrorAs(t, sf.apply(cmd.Flags().Changed), &usage)
}

func TestScheduleVolumeFlagsFillTheTemplate(t *testing.T) {
	cmd, sf := parsedScheduleCommand(t, "--cron", "@daily", "--snapshot-move-data", "--native-snapshots", "delete",
		"--datamover-prepare-timeout", "10m", "--datamover-timeout", "2h", "--csi-snapshot-timeout", "5m", "--volume-concurrency", "2",
		"--item-operation-timeout", "30m")
	require.NoError(t, sf.apply(cmd.Flags().Changed))
	tpl := sf.spec.Template
	assert.Equal(t, 30*time.Minute, tpl.ItemOperationTimeout.Duration)
	assert.True(t, tpl.SnapshotMoveData)
	assert.Equal(t, v1alpha1.NativeSnapshotsDelete, tpl.NativeSnapshots)
	assert.Equal(t, 10*time.Minute, tpl.DataMoverPrepareTimeout.Duration)
	assert.Equal(t, 2*time.Hour, tpl.DataMoverTimeout.Duration)
	assert.Equal(t, 5*time.Minute, tpl.CSISnapshotTimeout.Duration)
	assert.Equal(t, 2, sf.spec.BackupOptions.VolumeConcurrency)
	assert.Nil(t, tpl.SnapshotVolumes, "left to the default")
	tpl.Name = "nightly-20261123020000" // runs get their name when they start
	require.NoError(t, tpl.Validate(), "move-data with delete is a valid template")

	cmd, sf = parsedScheduleCommand(t, "--cron", "@daily", "--snapshot-volumes=false")
	require.NoError(t, sf.apply(cmd.Flags().Changed))
	require.NotNil(t, sf.spec.Template.SnapshotVolumes)
	assert.False(t, *sf.spec.Template.SnapshotVolumes)
}
