package devserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/server/common/config"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// prepareStore makes sure the SQLite file at path exists with the Temporal
// schema, and that namespace exists in it. A new file gets the schema; an
// existing file is left as it is.
func prepareStore(log *zap.Logger, path string, sql *config.SQL, namespace string, retention time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	_, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Info("creating Temporal database", zap.String("path", path))
		if err := sqliteschema.SetupSchema(sql); err != nil {
			// A half-built file would be taken as complete next time.
			_ = os.Remove(path)
			return fmt.Errorf("create schema in %s: %w", path, err)
		}
	case err != nil:
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if err := createNamespace(sql, namespace, retention); err != nil {
		return fmt.Errorf("create namespace %q in %s: %w", namespace, path, err)
	}
	return nil
}

// createNamespace writes namespace straight into the database unless it is
// there already. Doing it before the server starts means the namespace is
// in the server's namespace cache from the first request, instead of
// appearing only after a cache refresh as one registered over the API
// would.
func createNamespace(sql *config.SQL, namespace string, retention time.Duration) error {
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return err
	}
	ns.Detail.Config.Retention = durationpb.New(retention)
	return sqliteschema.CreateNamespaces(sql, ns)
}
