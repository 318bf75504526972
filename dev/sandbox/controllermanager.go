package sandbox

import (
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// controllerStopGrace is how long kube-controller-manager gets to exit after
// SIGTERM before it is killed.
const controllerStopGrace = 10 * time.Second

type controllerManagerConfig struct {
	binDir     string
	kubeconfig string
	logPath    string
	certDir    string // the API server's: SA signing key and serving CA
	// node adds the controllers a cluster with a node needs: node
	// lifecycle (lifts the not-ready taint), service accounts and the
	// kube-root-ca.crt ConfigMap (for the pods' tokens), endpoint slices
	// (for kube-proxy), deployments, replica sets and stateful sets.
	node bool
}

func controllerManagerArgs(c controllerManagerConfig, log *zap.Logger) []string {
	// The protection controllers release the finalizers the API server puts
	// on claims and volumes; without them a namespace with a claim never
	// finishes deleting. The aggregation controller fills the rules of the
	// ClusterRoles admin, edit and view, which teams are bound to.
	controllers := "namespace-controller,garbage-collector-controller,persistentvolume-binder-controller," +
		"persistentvolumeclaim-protection-controller,persistentvolume-protection-controller," +
		"clusterrole-aggregation-controller"
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
	if c.node {
		controllers += ",node-lifecycle-controller,serviceaccount-controller,root-ca-certificate-publisher-controller," +
			"endpointslice-controller,replicaset-controller,deployment-controller,statefulset-controller"
	}
	return append(args, "--controllers="+controllers)
}

// startControllerManager starts kube-controller-manager, a child process
// running the controllers a cluster without nodes needs: namespace
// deletion, garbage collection, PV binding and protection, and (given the
// signing key) legacy SA tokens. It does not wait for it to work (see
// waitWorking).
func startControllerManager(c controllerManagerConfig, log *zap.Logger) (*process, error) {
	return startProcess(processConfig{
		name:    controllerManagerBin,
		path:    filepath.Join(c.binDir, controllerManagerBin),
		args:    controllerManagerArgs(c, log),
		logPath: c.logPath,
		grace:   controllerStopGrace,
	}, log)
}
