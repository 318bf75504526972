package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/sealing"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/tests/fixtures/velero"
)

// TestEncryptedBackupsNeedTheirKey: a worker with --encryption-key writes
// a backup whose every object but backup.json is encrypted, in private
// files, with the Secret's value nowhere in the location. A worker
// without the key fails its restore with EncryptionKey and creates
// nothing; one whose rotated keyring still holds the old key restores it
// whole, and still restores a plain Velero backup.
func TestEncryptedBackupsNeedTheirKey(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	ctx := context.Background()
	oldKey := newKey(t)
	keyFile := s.useEncryptionKey(oldKey)
	oldID := s.locations.KeyID()

	kc := fastClient(t, s.cluster.Config())
	password := "hunter2-" + strings.Repeat("x", 12) + time.Now().Format("150405.000000")
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "enc"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.CoreV1().Secrets("enc").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": password}}, metav1.CreateOptions{})
	require.NoError(t, err)

	w := s.startWorker("--location", s.location, "--encryption-key", keyFile, "--datamover-encryption-key-secret", "cairn-encryption-key")
	s.backup(v1alpha1.BackupSpec{Name: "enc-1", IncludedNamespaces: []string{"enc"}})

	root := s.locationDir()
	var files int
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		if d.IsDir() {
			assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "directory %s", path)
			return nil
		}
		assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "file %s", path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(data), password, "%s holds the Secret's value in plain", path)
		files++
		return nil
	}))
	keys := locationKeys(t, s.location, "enc-1")
	require.NotEmpty(t, keys)
	for _, k := range keys {
		if b := filepath.Base(k); b != "backup.json" && b != "manifest.json" {
			assertSealed(t, s, k)
		}
	}
	var meta v1alpha1.BackupMetadata
	require.NoError(t, json.Unmarshal(readLocation(t, s, location.Backup("enc-1").Metadata()), &meta))
	assert.Equal(t, oldID, meta.EncryptionKeyID, "backup.json records the key")
	t.Logf("%d files in the location, none holding the Secret's value; key %s", files, oldID)

	// The CLI reads the run log with the key, and says what is missing without it.
	stdout, stderr, code := s.cli("backup", "logs", "enc-1", "--encryption-key", keyFile)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "enc-1")
	_, stderr, code = s.cli("backup", "logs", "enc-1")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "no encryption key is configured")

	t.Run("without the key: EncryptionKey, nothing restored", func(t *testing.T) {
		w.stop()
		w = s.startWorker("--location", s.location)
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "enc-nokey", BackupName: "enc-1",
			NamespaceMapping: map[string]string{"enc": "enc-nokey"}}}, 2*time.Minute)
		assert.Equal(t, v1alpha1.PhaseFailed, v.Phase)
		assert.Contains(t, v.Status.FailureReason, v1alpha1.ErrTypeEncryptionKey)
		_, err := kc.CoreV1().Secrets("enc-nokey").Get(ctx, "db", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "nothing is restored without the key: %v", err)
	})

	t.Run("with a rotated keyring: restored whole", func(t *testing.T) {
		w.stop()
		rotated := s.useEncryptionKey(newKey(t), oldKey)
		require.NotEqual(t, oldID, s.locations.KeyID())
		w = s.startWorker("--location", s.location, "--encryption-key", rotated, "--datamover-encryption-key-secret", "cairn-encryption-key")
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "enc-r", BackupName: "enc-1",
			NamespaceMapping: map[string]string{"enc": "enc-r"}}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
		sec, err := kc.CoreV1().Secrets("enc-r").Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, password, string(sec.Data["password"]))
		assert.Equal(t, v1alpha1.ItemRestored, s.outcomes("enc-r")["secrets enc-r/db"].Result, "results read with the new key")
		var rmeta v1alpha1.RestoreMetadata
		require.NoError(t, json.Unmarshal(readLocation(t, s, location.Restore("enc-r").Metadata()), &rmeta))
		assert.Equal(t, s.locations.KeyID(), rmeta.EncryptionKeyID, "the restore's own files use the new key")
	})

	t.Run("a plain Velero backup restores only when the restore allows plaintext", func(t *testing.T) {
		require.NoError(t, velero.Write(ctx, s.location, veleroShop("velero-plain")))
		v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "plain-refused", BackupName: "velero-plain",
			NamespaceMapping: map[string]string{"vshop": "vplain"}}}, 2*time.Minute)
		require.Equal(t, v1alpha1.PhaseFailed, v.Phase, "%+v", v.Status)
		assert.Contains(t, v.Status.FailureReason, "was not written with this location's encryption key")
		assert.Contains(t, v.Status.FailureReason, "CorruptBackup")

		v = s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "from-plain", BackupName: "velero-plain",
			NamespaceMapping: map[string]string{"vshop": "vplain"}, AllowPlaintext: true}}, 2*time.Minute)
		assert.NotEqual(t, v1alpha1.PhaseFailed, v.Phase, "%+v", v.Status)
		assert.Equal(t, v1alpha1.ItemRestored, s.outcomes("from-plain")["configmaps vplain/settings"].Result)
	})
}

// assertSealed checks that the object at key is stored encrypted.
func assertSealed(t *testing.T, s *stack, key string) {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), s.location)
	require.NoError(t, err)
	defer loc.Close()
	_, err = loc.ReadAll(context.Background(), key)
	var keyErr *sealing.KeyError
	assert.ErrorAs(t, err, &keyErr, "%s is encrypted", key)
	data, err := s.locations.Open(context.Background(), s.location)
	require.NoError(t, err)
	defer data.Close()
	plain, err := data.ReadAll(context.Background(), key)
	require.NoError(t, err, "%s reads with the key", key)
	assert.False(t, bytes.HasPrefix(plain, []byte("age-encryption.org/")))
}
