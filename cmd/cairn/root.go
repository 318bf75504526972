package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/sealing"
)

// globals are the flags every command shares. Each can also be set with an
// environment variable: CAIRN_ and the flag name in upper snake case
// (--temporal-address is CAIRN_TEMPORAL_ADDRESS).
type globals struct {
	dataDir         string
	temporalAddress string
	// temporalNamespace is Temporal's; namespace is Kubernetes'.
	temporalNamespace   string
	namespace           string
	controllerNamespace string
	tlsCert             string
	tlsKey              string
	tlsCA               string
	tlsServerName       string
	apiKey              string
	location            string
	locationNames       []string
	encryptionKey       string
	server              string
	token               string
	serverCA            string
	uiURL               string
	kubeconfig          string
	logLevel            string
	logFormat           string
}

func newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "cairn",
		Short: "Backup and restore for Kubernetes, as durable Temporal workflows",
		Long: `cairn backs up Kubernetes objects into a backup location and restores them.
Every backup and restore is a Temporal workflow, so a crash or restart of any
process resumes the work where it stopped instead of failing it.

Start everything on one machine:   cairn dev --sandbox
Back up a namespace:               cairn backup create nightly --include-namespaces shop --wait
Restore it as a copy:              cairn restore create shop-copy --from-backup nightly --namespace-mappings shop:shop-copy --wait
Back it up every night:            cairn schedule create nightly --cron "0 2 * * *" --include-namespaces shop --keep-last 7
Snapshot the cluster's etcd:       cairn etcd-snapshot create before-upgrade --wait
Watch runs in the Temporal UI:     http://127.0.0.1:8233`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags())
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })

	f := root.PersistentFlags()
	f.StringVar(&g.dataDir, "data-dir", ".cairn", "directory for the embedded Temporal database, the sandbox cluster and the default file location")
	f.StringVar(&g.temporalAddress, "temporal-address", "127.0.0.1:7233", "Temporal frontend host:port")
	f.StringVar(&g.temporalNamespace, "temporal-namespace", "default", "Temporal namespace")
	f.StringVarP(&g.namespace, "namespace", "n", "", "the Kubernetes namespace whose backups, restores and schedules a command is about: "+
		"their names are its own and they take it only (default: the cluster's, in --controller-namespace). "+
		"Creates make resources there, or with --server go to the API's paths of the namespace")
	f.StringVar(&g.controllerNamespace, "controller-namespace", defaultControllerNamespace(), "cairn's own namespace: its Backup, "+
		"Restore and Schedule resources act as the worker and are the cluster's; those of other namespaces act as their creator "+
		"and stay in their namespace; $POD_NAMESPACE, when set, is its default")
	f.StringVar(&g.tlsCert, "tls-cert", "", "client certificate for mTLS to Temporal")
	f.StringVar(&g.tlsKey, "tls-key", "", "client key for mTLS to Temporal")
	f.StringVar(&g.tlsCA, "tls-ca", "", "CA bundle that signed the Temporal server's certificate")
	f.StringVar(&g.tlsServerName, "tls-server-name", "", "server name to verify in Temporal's certificate")
	f.StringVar(&g.apiKey, "api-key", "", "Temporal Cloud API key (enables TLS)")
	f.StringVar(&g.location, "location", "", "default backup location URL (file://, s3://, gs://, azblob://); default file://<data-dir>/location")
	f.StringArrayVar(&g.locationNames, "location-name", nil, "a further location by name, NAME=URL[;readonly][;credentials=DIR][;immutable=PERIOD[;lock-mode=MODE]] (repeatable): "+
		"API requests name it, workers expire and maintain it (not a read-only one, which is only restored from); DIR holds its own credentials, "+
		"one file per variable (AWS_ACCESS_KEY_ID, ...), as a mounted Secret; immutable=30d locks every finished backup in an s3:// bucket "+
		"with Object Lock for that long (lock-mode compliance, the default, or governance); --location is \"default\"")
	f.StringVar(&g.encryptionKey, "encryption-key", "", "age identity file (age-keygen, or `cairn dev`'s <data-dir>/encryption-key): with it, what a backup writes outside "+
		"kopia's repository (tarball, results, logs, etcd snapshots) is encrypted with its first key, and read with any of them")
	f.StringVar(&g.server, "server", "", "the starter API's URL (https://cairn-api:8080): commands go through it, as the caller its token names, instead of to Temporal")
	f.StringVar(&g.token, "token", "", "bearer token for --server (default: the kubeconfig user's token, as kubectl sends it)")
	f.StringVar(&g.serverCA, "server-ca", "", "CA bundle that signed --server's certificate (default: the system's)")
	f.StringVar(&g.uiURL, "ui-url", "http://127.0.0.1:8233", "Temporal Web UI base URL, for links to runs")
	f.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster the worker backs up and restores into (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	f.StringVar(&g.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&g.logFormat, "log-format", "console", "console or json")

	root.AddCommand(newDevCommand(g), newWorkerCommand(g), newAPICommand(g), newBackupCommand(g), newRestoreCommand(g), newScheduleCommand(g), newEtcdSnapshotCommand(g), newDatamoverCommand(g), newVolumeWaitCommand(), newEncryptionKeyCommand(g), newVersionCommand())
	root.InitDefaultCompletionCmd() // cobra adds it on Execute; now, so refuseUnknownCommands sees it
	refuseUnknownCommands(root)
	return root
}

// refuseUnknownCommands makes every group (a command with subcommands and no
// Run of its own) fail on an unknown subcommand, and print its help when
// called alone. cobra checks for unknown subcommands only at the root: a
// group below it printed its help and exited 0 for `cairn backup lsit`.
func refuseUnknownCommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = noArgs
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply
	}
	for _, c := range cmd.Commands() {
		refuseUnknownCommands(c)
	}
}

// catalog is the named locations: "default" (--location) and
// --location-name's. allowURLs lets API requests give URLs too.
func (g *globals) catalog(allowURLs bool) (*location.Catalog, error) {
	def, err := g.defaultLocation()
	if err != nil {
		return nil, err
	}
	c, err := location.ParseCatalog(def, g.locationNames, allowURLs)
	if err != nil {
		return nil, &usageError{err}
	}
	return c, nil
}

// opener opens locations with the keys of keyFile, if any, and each
// named location's own credentials.
func (g *globals) opener() (*location.Opener, error) {
	catalog, err := g.catalog(false)
	if err != nil {
		return nil, err
	}
	o := &location.Opener{CredentialDirs: catalog.CredentialDirs(), Locks: catalog.Locks()}
	if path := g.keyFile(); path != "" {
		if o.Keyring, err = sealing.LoadKeyring(path); err != nil {
			return nil, &usageError{fmt.Errorf("--encryption-key: %w", err)}
		}
	}
	return o, nil
}

// locationArgs hand --location-name on to data movers, which open the
// locations with the same credentials.
func (g *globals) locationArgs() []string {
	var args []string
	for _, spec := range g.locationNames {
		args = append(args, "--location-name", spec)
	}
	return args
}

// keyFile is --encryption-key, or else the data dir's encryption-key when
// there is one (`cairn dev` makes it), as the default location is the
// data dir's too.
func (g *globals) keyFile() string {
	if g.encryptionKey != "" {
		return g.encryptionKey
	}
	path := devKeyPath(g)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	return ""
}

func devKeyPath(g *globals) string { return filepath.Join(g.dataDir, "encryption-key") }

// encryptionArgs hand the key file on to data movers.
func (g *globals) encryptionArgs() []string {
	if path := g.keyFile(); path != "" {
		return []string{"--encryption-key", path}
	}
	return nil
}

// defaultLocation is --location, or a file location under the data dir.
func (g *globals) defaultLocation() (string, error) {
	if g.location != "" {
		return g.location, nil
	}
	abs, err := filepath.Abs(filepath.Join(g.dataDir, "location"))
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	return "file://" + filepath.ToSlash(abs), nil
}

// applyEnv sets every flag the command line left alone from CAIRN_<NAME>.
func applyEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || err != nil {
			return
		}
		name := "CAIRN_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if serr := flags.Set(fl.Name, v); serr != nil {
				err = &usageError{fmt.Errorf("%s=%q: %w", name, v, serr)}
			}
		}
	})
	return err
}
