package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// devDataDir makes a data dir as cairn dev --sandbox leaves it: the
// sandbox's kubeconfig and CSI state, and the repository password.
func devDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sandbox", "csi"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sandbox", "kubeconfig"), []byte("{}"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "repository-password"), []byte("pw\n"), 0o600))
	return dir
}

// parseWorkerFlags registers the worker's data mover flags and parses args.
func parseWorkerFlags(t *testing.T, args ...string) (*dataMoverFlags, *cobra.Command) {
	t.Helper()
	cmd := &cobra.Command{Use: "worker"}
	d := &dataMoverFlags{}
	d.register(cmd.Flags())
	require.NoError(t, cmd.Flags().Parse(args))
	return d, cmd
}

func TestWorkerBesideCairnDevTakesItsSandboxSettings(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv(envRepositoryPassword, "")
	dir := devDataDir(t)
	g := &globals{dataDir: dir, kubeconfig: filepath.Join(dir, "sandbox", "..", "sandbox", "kubeconfig")}
	d, cmd := parseWorkerFlags(t)
	d.devSandboxDefaults(cmd.Flags(), g)
	assert.Equal(t, "process", d.exposer)
	assert.Equal(t, filepath.Join(dir, "sandbox", "csi"), d.csiStateDir)
	assert.Equal(t, filepath.Join(dir, "repository-password"), d.repo.passwordFile)
	pw, err := d.repo.password()
	require.NoError(t, err)
	assert.Equal(t, "pw", pw)
}

func TestWorkerBesideCairnDevKeepsGivenFlags(t *testing.T) {
	t.Setenv(envRepositoryPassword, "")
	dir := devDataDir(t)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "sandbox", "kubeconfig"))
	g := &globals{dataDir: dir}
	d, cmd := parseWorkerFlags(t, "--datamover-exposer", "pod", "--repository-password-secret", "repo")
	d.devSandboxDefaults(cmd.Flags(), g)
	assert.Equal(t, "pod", d.exposer, "the exposer given wins")
	assert.Empty(t, d.repo.passwordFile, "a password Secret given wins")
}

func TestWorkerOfAnotherClusterTakesNoDevSettings(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	dir := devDataDir(t)
	other := filepath.Join(t.TempDir(), "kubeconfig")
	for name, g := range map[string]*globals{
		"another kubeconfig": {dataDir: dir, kubeconfig: other},
		"no kubeconfig":      {dataDir: dir},
	} {
		d, cmd := parseWorkerFlags(t)
		d.devSandboxDefaults(cmd.Flags(), g)
		assert.Equal(t, "pod", d.exposer, name)
		assert.Empty(t, d.csiStateDir, name)
		assert.Empty(t, d.repo.passwordFile, name)
	}
}

// TestProcessDataMoversShareTheWorkersDataDir: a process data mover gets
// the worker's data directory, so it never takes the settings (an
// encryption key) of the directory it happens to start in.
func TestProcessDataMoversShareTheWorkersDataDir(t *testing.T) {
	t.Setenv(envRepositoryPassword, "pw")
	dir := t.TempDir()
	g := &globals{dataDir: dir}
	d, _ := parseWorkerFlags(t, "--datamover-exposer", "process", "--csi-state-dir", dir)
	m, err := d.config(context.Background(), g, nil, zap.NewNop())
	require.NoError(t, err)
	i := slices.Index(m.Command, "--data-dir")
	require.Positive(t, i, "%v", m.Command)
	assert.Equal(t, dir, m.Command[i+1])
}
