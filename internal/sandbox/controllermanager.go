package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// controllerStopGrace is how long kube-controller-manager gets to exit after
// SIGTERM before it is killed.
const controllerStopGrace = 10 * time.Second

// controllerManager is a kube-controller-manager child process running the
// controllers a cluster without nodes needs: namespace deletion, garbage
// collection, PV binding and protection, and (given the signing key)
// legacy SA tokens.
type controllerManager struct {
	cmd  *exec.Cmd
	log  *zap.Logger
	out  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, set before done is closed
	stop chan struct{} // closed when Stop begins, so the exit is expected
}

type controllerManagerConfig struct {
	binDir     string
	kubeconfig string
	logPath    string
	certDir    string // the API server's: SA signing key and serving CA
}

func controllerManagerArgs(c controllerManagerConfig, log *zap.Logger) []string {
	// The protection controllers release the finalizers the API server puts
	// on claims and volumes; without them a namespace with a claim never
	// finishes deleting.
	controllers := "namespace-controller,garbage-collector-controller,persistentvolume-binder-controller," +
		"persistentvolumeclaim-protection-controller,persistentvolume-protection-controller"
	args := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	}
	saKey := filepath.Join(c.certDir, saSigningKey)
	if _, err := os.Stat(saKey); err == nil {
		controllers += ",serviceaccount-token-controller"
		args = append(args,
			"--service-account-private-key-file="+saKey,
			"--root-ca-file="+filepath.Join(c.certDir, servingCA))
	} else {
		log.Warn("no service account signing key: legacy service account tokens stay empty", zap.Error(err))
	}
	return append(args, "--controllers="+controllers)
}

// startControllerManager starts the process; it does not wait for it to
// work (see waitWorking).
func startControllerManager(c controllerManagerConfig, log *zap.Logger) (*controllerManager, error) {
	out, err := openLog(c.logPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox: kube-controller-manager: %w", err)
	}
	cmd := exec.Command(filepath.Join(c.binDir, controllerManagerBin), controllerManagerArgs(c, log)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("sandbox: start kube-controller-manager: %w", err)
	}
	cm := &controllerManager{
		cmd:  cmd,
		log:  log.With(zap.String("component", controllerManagerBin), zap.Int("pid", cmd.Process.Pid)),
		out:  out,
		done: make(chan struct{}),
		stop: make(chan struct{}),
	}
	go cm.wait()
	cm.log.Info("kube-controller-manager started", zap.String("log", c.logPath))
	return cm, nil
}

func (cm *controllerManager) wait() {
	cm.err = cm.cmd.Wait()
	close(cm.done)
	select {
	case <-cm.stop:
	default:
		cm.log.Error("kube-controller-manager exited unexpectedly", zap.Error(cm.err))
	}
}

// exited returns a non-nil error if the process has exited.
func (cm *controllerManager) exited() error {
	select {
	case <-cm.done:
		return fmt.Errorf("kube-controller-manager exited (%v); see %s", cm.err, cm.out.Name())
	default:
		return nil
	}
}

// Stop sends SIGTERM, and SIGKILL if the process is still there after the
// grace period. Call it once.
func (cm *controllerManager) Stop() error {
	close(cm.stop)
	defer cm.out.Close()
	select {
	case <-cm.done:
		return nil // already gone; wait() has logged why
	default:
	}
	if err := cm.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: signal kube-controller-manager: %w", err)
	}
	select {
	case <-cm.done:
		return nil
	case <-time.After(controllerStopGrace):
	}
	cm.log.Warn("kube-controller-manager ignored SIGTERM, killing it", zap.Duration("grace", controllerStopGrace))
	if err := cm.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: kill kube-controller-manager: %w", err)
	}
	<-cm.done
	return nil
}
