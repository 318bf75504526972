package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/worker"
)

// dataMoverFlags configure how the worker exposes volumes to data movers.
type dataMoverFlags struct {
	exposer        string
	namespace      string
	image          string
	pullPolicy     string
	serviceAccount string
	nodeSelector   map[string]string
	requests       map[string]string
	limits         map[string]string
	runAsUser      int64
	hostNetwork    bool
	hostPaths      []string
	uploadLimit    float64
	downloadLimit  float64
	checkpoint     time.Duration
	stateDir       string
	csiStateDir    string
	podsDir        string
	concurrency    int
	concurrencyBy  map[string]int
	repo           repositoryFlags
	secrets        exposer.PodSecrets
}

func (d *dataMoverFlags) register(f *pflag.FlagSet) {
	f.StringVar(&d.exposer, "datamover-exposer", "pod", "how volume data reaches a data mover: pod (a pod mounting a claim made from the snapshot) "+
		"or process (the sandbox: a local process reading the test CSI driver's files)")
	f.StringVar(&d.namespace, "datamover-namespace", worker.DefaultDataMoverNamespace, "namespace of the data movers' pods, claims and snapshot clones")
	f.StringVar(&d.image, "datamover-image", "ghcr.io/cairn-backup/cairn:"+version, "image of data mover pods (holds /cairn)")
	f.StringVar(&d.pullPolicy, "datamover-pull-policy", string(corev1.PullIfNotPresent), "image pull policy of data mover pods")
	f.StringVar(&d.serviceAccount, "datamover-service-account", "", "service account of data mover pods")
	f.StringToStringVar(&d.nodeSelector, "datamover-node-selector", nil, "node selector of data mover pods, e.g. kubernetes.io/os=linux")
	f.StringToStringVar(&d.requests, "datamover-requests", nil, "resource requests of data mover pods, e.g. cpu=500m,memory=512Mi")
	f.StringToStringVar(&d.limits, "datamover-limits", nil, "resource limits of data mover pods, e.g. memory=2Gi")
	f.Int64Var(&d.runAsUser, "datamover-run-as-user", -1, "UID data mover pods run as (-1: the image's); root may be needed to read every file of a volume")
	f.Float64Var(&d.uploadLimit, "datamover-upload-bytes-per-second", 0, "data movers' cap on writes to the repository storage (0: none)")
	f.Float64Var(&d.downloadLimit, "datamover-download-bytes-per-second", 0, "data movers' cap on reads from the repository storage during restores (0: none)")
	f.DurationVar(&d.checkpoint, "datamover-checkpoint-interval", 0, "how often data movers save a checkpoint a retry resumes from (0: the data mover's default, 30s)")
	f.BoolVar(&d.hostNetwork, "datamover-host-network", false, "data mover pods use the node's network, to reach a Temporal that listens on the node's loopback (the sandbox)")
	f.StringSliceVar(&d.hostPaths, "datamover-host-path", nil, "node directory mounted at the same path in data mover pods: a file:// location every node shares (NFS)")
	f.StringVar(&d.stateDir, "datamover-state-dir", "", "process exposer: where data mover records and logs go (default <data-dir>/datamovers)")
	f.StringVar(&d.csiStateDir, "csi-state-dir", "", "process exposer: the sandbox CSI driver's state directory")
	f.StringVar(&d.podsDir, "kubelet-pods-dir", expose.DefaultPodsDir, "the kubelet's pods directory on the nodes (<--root-dir>/pods): "+
		"a file-system backup's data mover mounts one pod volume's directory below it, read-only")
	f.IntVar(&d.concurrency, "datamover-concurrency", 1, "data movers one node runs at once, across all backups and restores (the rest wait in line)")
	f.StringToIntVar(&d.concurrencyBy, "datamover-concurrency-node", nil, "per-node override of --datamover-concurrency, e.g. big-node-1=4")
	f.StringVar(&d.secrets.TemporalTLS, "datamover-tls-secret", "", "Secret (tls.crt, tls.key, ca.crt) data mover pods mount where --tls-cert, --tls-key and --tls-ca are")
	f.StringVar(&d.secrets.APIKey, "datamover-api-key-secret", "", "Secret holding the Temporal API key of data mover pods")
	f.StringVar(&d.secrets.APIKeyKey, "datamover-api-key-secret-key", "api-key", "key of the API key in --datamover-api-key-secret")
	f.StringVar(&d.secrets.EncryptionKey, "datamover-encryption-key-secret", "", "Secret holding --encryption-key's file, which data mover pods mount in the same directory to encrypt their logs")
	f.StringToStringVar(&d.secrets.Mounts, "datamover-secret-mount", nil, "Secret data mover pods mount at a directory, SECRET=DIR (repeatable): "+
		"where --location-name's credentials=DIR are on the worker")
	f.StringSliceVar(&d.secrets.Env, "datamover-env-secret", nil, "Secret whose keys become data mover pods' environment: the location's credentials (repeatable)")
	f.StringVar(&d.secrets.From, "datamover-secrets-namespace", "", "namespace of the --datamover-*-secret Secrets (the worker's own); the worker copies them into "+
		"--datamover-namespace before each data mover pod starts (empty: they are there already)")
	d.repo.register(f, true)
}

// config builds the worker's data movement settings. The password is
// handed to process data movers in their environment; pods read the
// Secret themselves.
func (d *dataMoverFlags) config(ctx context.Context, g *globals, kcfg *rest.Config, log *zap.Logger) (worker.DataMovement, error) {
	if d.concurrency < 1 {
		return worker.DataMovement{}, &usageError{fmt.Errorf("--datamover-concurrency %d: at least 1", d.concurrency)}
	}
	if !filepath.IsAbs(d.podsDir) {
		return worker.DataMovement{}, &usageError{fmt.Errorf("--kubelet-pods-dir %q: an absolute path on the nodes", d.podsDir)}
	}
	m := worker.DataMovement{Exposer: d.exposer, Namespace: d.namespace, PodsDir: filepath.Clean(d.podsDir),
		Concurrency: expose.Concurrency{Default: d.concurrency, ByNode: d.concurrencyBy}}
	password, err := d.repo.password()
	if err != nil {
		return m, err
	}
	if password == "" && d.repo.passwordSecret != "" {
		// A worker that starts without it would fail every data move: it
		// does not start, and says which Secret is missing.
		if password, err = d.repo.secretPassword(ctx, kcfg, d.namespace); err != nil {
			return m, err
		}
	}
	hostname, _ := os.Hostname()
	m.Repository = kopiarepo.Config{Password: password, ConfigDir: filepath.Join(g.dataDir, "kopia"), Hostname: hostname}
	switch d.exposer {
	case "pod":
		pod, err := d.podConfig(g)
		if err != nil {
			return m, err
		}
		if d.repo.passwordSecret == "" {
			log.Warn("No --repository-password-secret: data mover pods will have no repository password")
		}
		if g.apiKey != "" && d.secrets.APIKey == "" {
			log.Warn("No --datamover-api-key-secret: data mover pods will reach Temporal without an API key")
		}
		m.Pod = pod
	case "process":
		// Restored pods' restore-wait init containers run the image
		// wherever their data movers run.
		m.Pod = exposer.PodConfig{Image: d.image, ImagePullPolicy: corev1.PullPolicy(d.pullPolicy)}
		exe, err := os.Executable()
		if err != nil {
			return m, fmt.Errorf("find the cairn binary for data movers: %w", err)
		}
		// The worker's data directory: a data mover of its own default
		// (./.cairn where it starts) could take another installation's
		// encryption key, and write logs the worker cannot read.
		dataDir, err := filepath.Abs(g.dataDir)
		if err != nil {
			return m, fmt.Errorf("data dir: %w", err)
		}
		m.Command = append(append([]string{exe, "datamover", "--data-dir", dataDir}, g.dataMoverArgs()...), d.tuningArgs()...)
		m.Env = append(g.connectionEnv(), envRepositoryPassword+"="+password)
		m.StateDir = d.stateDirOr(g)
		if d.csiStateDir == "" {
			return m, &usageError{fmt.Errorf("--datamover-exposer process needs --csi-state-dir (the sandbox CSI driver's state)")}
		}
		m.CSIStateDir = d.csiStateDir
	default:
		return m, &usageError{fmt.Errorf("--datamover-exposer %q: use pod or process", d.exposer)}
	}
	return m, nil
}

func (d *dataMoverFlags) podConfig(g *globals) (exposer.PodConfig, error) {
	c := exposer.PodConfig{
		Image: d.image, ImagePullPolicy: corev1.PullPolicy(d.pullPolicy), ServiceAccount: d.serviceAccount,
		NodeSelector: d.nodeSelector, Args: append(g.dataMoverArgs(), d.tuningArgs()...), HostNetwork: d.hostNetwork, HostPaths: d.hostPaths,
		PasswordSecret: d.repo.passwordSecret, PasswordKey: secretPasswordKey,
	}
	for _, p := range d.hostPaths {
		if !filepath.IsAbs(p) {
			return c, &usageError{fmt.Errorf("--datamover-host-path %q: an absolute path", p)}
		}
	}
	var err error
	if c.Secrets, err = d.podSecrets(g); err != nil {
		return c, err
	}
	if c.Resources.Requests, err = resourceList("--datamover-requests", d.requests); err != nil {
		return c, err
	}
	if c.Resources.Limits, err = resourceList("--datamover-limits", d.limits); err != nil {
		return c, err
	}
	if d.runAsUser >= 0 {
		uid := d.runAsUser
		c.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	} else {
		// The image's user; its group owns the claim's files where the CSI
		// driver lets the kubelet apply an fsGroup, so a restore can write.
		gid := imageGroup
		policy := corev1.FSGroupChangeOnRootMismatch
		c.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid, FSGroupChangePolicy: &policy}
	}
	return c, nil
}

// podSecrets are the Secrets of data mover pods. The TLS Secret is
// mounted where the worker's own TLS files are, since the pods get the
// same --tls-* flags.
func (d *dataMoverFlags) podSecrets(g *globals) (exposer.PodSecrets, error) {
	s := d.secrets
	key := g.keyFile()
	switch {
	case key != "" && s.EncryptionKey == "":
		return s, &usageError{fmt.Errorf("--encryption-key with the pod exposer needs --datamover-encryption-key-secret, the Secret data mover pods mount it from")}
	case key != "":
		s.EncryptionKeyDir = filepath.Dir(key)
	case s.EncryptionKey != "":
		return s, &usageError{fmt.Errorf("--datamover-encryption-key-secret needs --encryption-key, where the Secret is mounted in data mover pods")}
	}
	if s.TemporalTLS == "" {
		if g.tlsCert != "" || g.tlsCA != "" {
			return s, &usageError{fmt.Errorf("--tls-cert or --tls-ca with the pod exposer needs --datamover-tls-secret, the Secret data mover pods mount them from")}
		}
		return s, nil
	}
	dirs := map[string]bool{}
	for _, f := range []string{g.tlsCert, g.tlsKey, g.tlsCA} {
		if f != "" {
			dirs[filepath.Dir(f)] = true
		}
	}
	if len(dirs) != 1 {
		return s, &usageError{fmt.Errorf("--datamover-tls-secret needs --tls-cert, --tls-key and --tls-ca in one directory, where the Secret is mounted")}
	}
	for dir := range dirs {
		s.TemporalTLSDir = dir
	}
	return s, nil
}

// imageGroup is the group of cairn's image's user (ociimage.NonRoot).
const imageGroup int64 = 65532

func resourceList(flag string, in map[string]string) (corev1.ResourceList, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for k, v := range in {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, &usageError{fmt.Errorf("%s %s=%s: %w", flag, k, v, err)}
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// dataMoverArgs are the global flags a data mover gets from its worker:
// the same Temporal namespace, encryption key and locations.
func (g *globals) dataMoverArgs() []string {
	return append(append(g.connectionArgs(), g.encryptionArgs()...), g.locationArgs()...)
}

// connectionArgs are the flags that reach the same Temporal namespace.
func (g *globals) connectionArgs() []string {
	args := []string{"--temporal-address", g.temporalAddress, "--temporal-namespace", g.temporalNamespace,
		"--log-level", g.logLevel, "--log-format", "json"}
	for _, f := range [][2]string{{"--tls-cert", g.tlsCert}, {"--tls-key", g.tlsKey}, {"--tls-ca", g.tlsCA}, {"--tls-server-name", g.tlsServerName}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	return args
}

// connectionEnv carries the Temporal API key, which stays off the
// command line.
func (g *globals) connectionEnv() []string {
	if g.apiKey == "" {
		return nil
	}
	return []string{"CAIRN_API_KEY=" + g.apiKey}
}

// tuningArgs are the data mover flags the worker's --datamover-* flags set.
func (d *dataMoverFlags) tuningArgs() []string {
	var args []string
	if d.uploadLimit > 0 {
		args = append(args, "--upload-bytes-per-second", strconv.FormatFloat(d.uploadLimit, 'f', -1, 64))
	}
	if d.downloadLimit > 0 {
		args = append(args, "--download-bytes-per-second", strconv.FormatFloat(d.downloadLimit, 'f', -1, 64))
	}
	if d.checkpoint > 0 {
		args = append(args, "--checkpoint-interval", d.checkpoint.String())
	}
	return args
}

// stateDirOr is --datamover-state-dir, or <data-dir>/datamovers.
func (d *dataMoverFlags) stateDirOr(g *globals) string {
	if d.stateDir != "" {
		return d.stateDir
	}
	return filepath.Join(g.dataDir, "datamovers")
}
