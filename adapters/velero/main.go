// Command cairn-velero-adapter serves Velero item-action plugins as a
// cairn extension: the backup, restore and delete item actions (v1 and
// v2) of the plugin binaries in a directory, started and restarted
// through Velero's own plugin client, answer cairn's calls on one task
// queue, and their async operations are cairn operations whose progress
// the adapter asks for.
//
//	cairn-velero-adapter --plugin-dir /plugins --task-queue velero-plugins --address 127.0.0.1:7233
//	cairn-velero-adapter --plugin-dir /plugins --print-registration velero-plugins
//
// The second prints the Extensions document that registers the adapter
// with cairn's worker for the types the plugins apply to.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt"
	"github.com/vmware-tanzu/velero/pkg/plugin/clientmgmt/process"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"

	"github.com/cairn-backup/cairn/pkg/extension"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run-plugins" {
		// Velero's plugin registry asks its own executable for the
		// plugins built into it, as the velero server has some: none here.
		framework.NewServer().Serve()
		return
	}
	address := flag.String("address", "127.0.0.1:7233", "Temporal's frontend, host:port")
	namespace := flag.String("namespace", "default", "Temporal namespace cairn runs in")
	taskQueue := flag.String("task-queue", "velero-plugins", "task queue the adapter is registered with in cairn")
	pluginDir := flag.String("plugin-dir", "", "directory of Velero plugin binaries, as Velero's /plugins (required)")
	veleroNamespace := flag.String("velero-namespace", "velero", "namespace of the Backup and Restore objects the plugins are handed")
	poll := flag.Duration("poll", 2*time.Second, "how often an operation's progress is asked")
	register := flag.String("print-registration", "", "print the Extensions document registering the adapter under this name, and exit")
	flag.Parse()
	log := logrus.New()
	log.SetFormatter(&logrus.JSONFormatter{})
	entry := log.WithField("extension", "velero-adapter")
	if *pluginDir == "" || *poll <= 0 {
		fmt.Fprintln(os.Stderr, "cairn-velero-adapter: --plugin-dir is required and --poll must be positive")
		os.Exit(2)
	}
	if err := run(entry, *pluginDir, *address, *namespace, *taskQueue, *veleroNamespace, *register, *poll); err != nil {
		entry.WithError(err).Error("Stopped")
		os.Exit(1)
	}
}

func run(log *logrus.Entry, pluginDir, address, namespace, taskQueue, veleroNamespace, register string, poll time.Duration) error {
	// Velero's registry hands every plugin the arguments of its own
	// executable after the second: the adapter's flags are not theirs.
	os.Args = []string{os.Args[0], "serve"}
	registry := process.NewRegistry(pluginDir, log, logrus.InfoLevel)
	if err := registry.DiscoverPlugins(); err != nil {
		return fmt.Errorf("discover the plugins in %s: %w", pluginDir, err)
	}
	manager := clientmgmt.NewManager(log, logrus.InfoLevel, registry)
	defer manager.CleanupClients()
	a, err := newAdapter(manager, registry, veleroNamespace, poll, log)
	if err != nil {
		return err
	}
	if register != "" {
		_, err := os.Stdout.WriteString(a.registration(register, taskQueue))
		return err
	}
	if len(a.backups)+len(a.restores)+len(a.deletes) == 0 {
		return errors.New("the plugins in " + pluginDir + " register no backup, restore or delete item action")
	}
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace})
	if err != nil {
		return fmt.Errorf("dial Temporal: %w", err)
	}
	defer c.Close()
	w := worker.New(c, taskQueue, worker.Options{})
	if len(a.backups) > 0 {
		extension.RegisterBackup(w, a)
	}
	if len(a.restores) > 0 {
		extension.RegisterRestore(w, a)
	}
	if len(a.deletes) > 0 {
		extension.RegisterDelete(w, a)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.WithFields(logrus.Fields{"taskQueue": taskQueue, "backupActions": len(a.backups), "restoreActions": len(a.restores),
		"deleteActions": len(a.deletes)}).Info("Serving")
	interrupt := make(chan any)
	go func() { <-ctx.Done(); close(interrupt) }()
	return w.Run(interrupt)
}

// newAdapter asks Velero's plugin manager for every item action the
// plugins register, in the order of its registry.
func newAdapter(m clientmgmt.Manager, r process.Registry, veleroNamespace string, poll time.Duration, log logrus.FieldLogger) (*adapter, error) {
	a := &adapter{veleroNamespace: veleroNamespace, poll: poll, log: log}
	bias, err := m.GetBackupItemActionsV2()
	if err != nil {
		return nil, fmt.Errorf("backup item actions: %w", err)
	}
	if a.backups, err = namedActions(bias); err != nil {
		return nil, err
	}
	rias, err := m.GetRestoreItemActionsV2()
	if err != nil {
		return nil, fmt.Errorf("restore item actions: %w", err)
	}
	if a.restores, err = namedActions(rias); err != nil {
		return nil, err
	}
	// Delete item actions do not say their name: the registry does.
	for _, id := range r.List(common.PluginKindDeleteItemAction) {
		d, err := m.GetDeleteItemAction(id.Name)
		if err != nil {
			return nil, fmt.Errorf("delete item action %s: %w", id.Name, err)
		}
		act, err := newAction(id.Name, d)
		if err != nil {
			return nil, err
		}
		a.deletes = append(a.deletes, act)
	}
	return a, nil
}

// namedActions asks each action that says its name what it applies to.
func namedActions[T interface {
	applier
	Name() string
}](all []T) ([]action[T], error) {
	out := make([]action[T], 0, len(all))
	for _, do := range all {
		act, err := newAction(do.Name(), do)
		if err != nil {
			return nil, err
		}
		out = append(out, act)
	}
	return out, nil
}
