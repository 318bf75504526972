package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// The sandbox's CSI classes (with Options.CSI). Neither is the cluster's
// default StorageClass: a claim asks for CSIStorageClass by name.
const (
	// CSIStorageClass provisions volumes of the sandbox's CSI driver at
	// once (Immediate binding, no nodes needed), deleted with their claims.
	CSIStorageClass = "cairn-csi"
	// CSISnapshotClass is the default VolumeSnapshotClass, for the same
	// driver, deleting the snapshot with its VolumeSnapshotContent.
	CSISnapshotClass = "cairn-csi-snapshots"
)

const (
	// csiStopGrace is how long the driver and each sidecar get to exit after
	// SIGTERM before they are killed (the driver lets calls in flight finish
	// for up to 5 s).
	csiStopGrace = 10 * time.Second
	// csiReadyTimeout bounds the wait for the driver to answer and for the
	// sidecars to connect to it.
	csiReadyTimeout = 60 * time.Second
	// csiCallTimeout is the sidecars' timeout for one CSI call. The driver
	// copies a volume's files within CreateSnapshot and CreateVolume (from a
	// snapshot) and serves one call at a time, so calls on large volumes
	// take a while; a timed out call is repeated, not resumed.
	csiCallTimeout = 5 * time.Minute
	// csiRetryMax caps the sidecars' exponential retry interval (5 min by
	// default): the csi-snapshotter polls a snapshot that is not ready yet
	// at that pace, and an error a test injects and clears should not cost
	// minutes.
	csiRetryMax = 5 * time.Second
	// csiNodeID is what the driver's NodeGetInfo reports.
	csiNodeID = "sandbox"
	// socketName is the driver's socket, in the state dir when the path
	// fits (see csiSocketPath).
	socketName = "csi.sock"
)

// sidecar describes how to run one of the external CSI controllers and how
// to tell, from its log, that it is up.
type sidecar struct {
	bin  string
	args func(socket, kubeconfig string) []string
	// ready is a line fragment the sidecar logs once it has connected to
	// the driver (or, for snapshot-controller, found the CRDs).
	ready string
}

func sidecars() []sidecar {
	common := func(socket, kubeconfig string) []string {
		return []string{
			"--csi-address=" + socket,
			"--kubeconfig=" + kubeconfig,
			"--leader-election=false",
			"--timeout=" + csiCallTimeout.String(),
			"--retry-interval-max=" + csiRetryMax.String(),
			"--kube-api-qps=50",
			"--kube-api-burst=100",
			"--v=2",
		}
	}
	return []sidecar{
		{
			bin: provisionerBin,
			// Immediate binding and no topology: the driver does not
			// advertise VOLUME_ACCESSIBILITY_CONSTRAINTS, so the
			// provisioner never looks at nodes or CSINodes, which the
			// sandbox does not have.
			args:  common,
			ready: "Detected CSI driver " + csistate.DriverName,
		},
		{
			bin: snapshotterBin,
			args: func(socket, kubeconfig string) []string {
				// No group snapshots: without their CRDs the sidecar would
				// look for them for a minute (--timeout) before going on.
				return append(common(socket, kubeconfig), "--feature-gates=CSIVolumeGroupSnapshot=false")
			},
			ready: "Start NewCSISnapshotSideCarController with snapshotter [" + csistate.DriverName + "]",
		},
		{
			bin: snapshotControllerBin,
			args: func(_, kubeconfig string) []string {
				return []string{
					"--kubeconfig=" + kubeconfig,
					"--leader-election=false",
					"--retry-interval-max=" + csiRetryMax.String(),
					"--kube-api-qps=50",
					"--kube-api-burst=100",
					// As for csi-snapshotter; it would wait 30 s.
					"--feature-gates=CSIVolumeGroupSnapshot=false",
					"--v=2",
				}
			},
			ready: "Start NewCSISnapshotController",
		},
	}
}

// csiStack is the CSI driver and its sidecars, child processes of this one.
type csiStack struct {
	stateDir  string
	socket    string
	socketDir string // a temporary directory holding the socket, or "" if it is in stateDir
	driver    *process
	sidecars  []*process
	log       *zap.Logger
}

type csiConfig struct {
	binDir     string
	dataDir    string
	kubeconfig string
	// registrationDir is the node's kubelet's plugin registration
	// directory, "" without a node.
	registrationDir string
}

// start installs the VolumeSnapshot CRDs, starts the driver and, while it
// comes up, waits for the API server's watch caches of the new resources;
// waits until the driver answers, starts the sidecars, creates the classes,
// and returns once every sidecar has logged that it is connected and
// running. On error, stop cleans up what was started.
func (s *csiStack) start(ctx context.Context, c *Cluster, cfg csiConfig) error {
	ctx, cancel := context.WithTimeout(ctx, csiReadyTimeout)
	defer cancel()
	start := time.Now()
	if err := installSnapshotCRDs(c.Config(), filepath.Join(cfg.binDir, crdDir), csiReadyTimeout, s.log); err != nil {
		return err
	}
	crdsReady := time.Since(start)

	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return fmt.Errorf("sandbox: create %s: %w", s.stateDir, err)
	}
	var err error
	if s.socket, s.socketDir, err = csiSocketPath(s.stateDir); err != nil {
		return err
	}
	s.driver, err = startProcess(processConfig{
		name: csiDriverBin,
		path: filepath.Join(cfg.binDir, csiDriverBin),
		args: append([]string{"--endpoint", "unix://" + s.socket, "--state-dir", s.stateDir, "--node-id", csiNodeID},
			registrationArgs(cfg.registrationDir)...),
		logPath: filepath.Join(cfg.dataDir, csiDriverBin+".log"),
		grace:   csiStopGrace,
	}, s.log)
	if err != nil {
		return err
	}
	if err := waitWatchCaches(ctx, c.cs, s.log); err != nil {
		return err
	}
	if err := waitDriver(ctx, s.socket, s.driver, s.log); err != nil {
		return err
	}
	driverReady := time.Since(start)

	specs := sidecars()
	for _, sc := range specs {
		p, err := startProcess(processConfig{
			name:    sc.bin,
			path:    filepath.Join(cfg.binDir, sc.bin),
			args:    sc.args(s.socket, cfg.kubeconfig),
			logPath: filepath.Join(cfg.dataDir, sc.bin+".log"),
			grace:   csiStopGrace,
		}, s.log)
		if err != nil {
			return err
		}
		s.sidecars = append(s.sidecars, p)
	}
	if err := ensureCSIClasses(ctx, c.Config()); err != nil {
		return err
	}
	for i, p := range s.sidecars {
		if err := waitLogLine(ctx, p, specs[i].ready); err != nil {
			return err
		}
	}
	s.log.Info("CSI stack ready",
		zap.String("driver", csistate.DriverName),
		zap.String("socket", s.socket),
		zap.String("stateDir", s.stateDir),
		zap.Duration("crdsEstablished", crdsReady),
		zap.Duration("driverAnswered", driverReady),
		zap.Duration("took", time.Since(start)))
	return nil
}

// stop stops the sidecars (together), then the driver, and removes a
// temporary socket directory.
func (s *csiStack) stop() error {
	errs := make([]error, len(s.sidecars)+2)
	var wg sync.WaitGroup
	for i, p := range s.sidecars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop()
		}()
	}
	wg.Wait()
	if s.driver != nil {
		errs[len(s.sidecars)] = s.driver.Stop()
	}
	if s.socketDir != "" {
		if err := os.RemoveAll(s.socketDir); err != nil {
			errs[len(s.sidecars)+1] = fmt.Errorf("sandbox: remove CSI socket dir: %w", err)
		}
	}
	return errors.Join(errs...)
}

// processes returns the stack's running child processes.
func (s *csiStack) processes() []*process {
	var ps []*process
	if s.driver != nil {
		ps = append(ps, s.driver)
	}
	return append(ps, s.sidecars...)
}

// csiSocketPath returns stateDir/csi.sock, or, when that path is too long
// for a unix socket (a deep DataDir), csi.sock in a new short temporary
// directory that the caller removes.
func csiSocketPath(stateDir string) (socket, tmpDir string, err error) {
	if p := filepath.Join(stateDir, socketName); len(p) <= csistate.MaxSocketPathLen {
		return p, "", nil
	}
	tmpDir, err = os.MkdirTemp("", "cairn-csi-")
	if err != nil {
		return "", "", fmt.Errorf("sandbox: CSI socket dir: %w", err)
	}
	p := filepath.Join(tmpDir, socketName)
	if len(p) > csistate.MaxSocketPathLen {
		os.RemoveAll(tmpDir)
		return "", "", fmt.Errorf("sandbox: CSI socket path %s is longer than %d bytes even in the temporary directory (set $TMPDIR)",
			p, csistate.MaxSocketPathLen)
	}
	return p, tmpDir, nil
}

// waitDriver waits until the driver's socket accepts connections and the
// driver answers Probe as ready, and checks that it is the driver the
// classes name.
func waitDriver(ctx context.Context, socket string, driver *process, log *zap.Logger) error {
	start := time.Now()
	// Dial first: a gRPC client that finds no socket backs off for a second
	// before it tries again, and the driver needs a moment to listen.
	err := driver.waitUntil(ctx, "listen on "+socket, func() (bool, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", socket)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("sandbox: CSI driver socket %s: %w", socket, err)
	}
	defer conn.Close()
	id := csi.NewIdentityClient(conn)
	err = driver.waitUntil(ctx, "answer Probe on "+socket, func() (bool, error) {
		err := probeDriver(ctx, id)
		return err == nil, err
	})
	if err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := id.GetPluginInfo(callCtx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return fmt.Errorf("sandbox: CSI driver GetPluginInfo: %w", err)
	}
	if info.GetName() != csistate.DriverName {
		return fmt.Errorf("sandbox: CSI driver on %s is %q, want %q", socket, info.GetName(), csistate.DriverName)
	}
	log.Info("CSI driver answers", zap.String("socket", socket), zap.String("version", info.GetVendorVersion()),
		zap.Duration("took", time.Since(start)))
	return nil
}

func probeDriver(ctx context.Context, id csi.IdentityClient) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := id.Probe(ctx, &csi.ProbeRequest{})
	if err != nil {
		return err
	}
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		return errors.New("driver probed not ready")
	}
	return nil
}

// waitLogLine waits until p has written a line containing fragment to its
// log since it started.
func waitLogLine(ctx context.Context, p *process, fragment string) error {
	start := time.Now()
	err := p.waitUntil(ctx, fmt.Sprintf("log %q", fragment), func() (bool, error) {
		return logContains(p.logPath(), p.start, fragment)
	})
	if err == nil {
		p.log.Info(p.name+" is up", zap.Duration("took", time.Since(start)))
	}
	return err
}

// logContains reports whether the file, from offset on, contains fragment.
func logContains(path string, offset int64, fragment string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<62))
	if err != nil {
		return false, err
	}
	return bytes.Contains(data, []byte(fragment)), nil
}

// CSIStateDir returns the CSI driver's state directory (DataDir/csi, laid
// out as csistate.Layout describes), or "" if the cluster was started
// without Options.CSI. Volumes, snapshots and the control file in it
// survive Stop, as etcd's data does.
func (c *Cluster) CSIStateDir() string {
	if c.csi == nil {
		return ""
	}
	return c.csi.stateDir
}

// SetCSIControl replaces the CSI driver's control file, which the driver
// reads on every call: the change applies from its next call on. The file
// survives Stop; the zero Control undoes every knob.
func (c *Cluster) SetCSIControl(ctl csistate.Control) error {
	if c.csi == nil {
		return errNoCSI
	}
	if err := csistate.WriteControl(c.csi.stateDir, ctl); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

var errNoCSI = errors.New("sandbox: cluster started without Options.CSI")

func registrationArgs(dir string) []string {
	if dir == "" {
		return nil
	}
	return []string{"--kubelet-registration-dir", dir}
}
