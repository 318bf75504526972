// Command csidriver is the sandbox's CSI driver: its volumes and snapshots
// are directories in a state directory laid out by
// internal/csistate, so tests write a volume's files directly and
// read a snapshot's back. It serves the identity, controller and node
// services of CSI v1.13 on a unix socket for the external-provisioner and
// the csi-snapshotter, and logs every call to stderr.
//
//	go run ./tests/csidriver --state-dir /tmp/csi1 [--endpoint unix:///tmp/csi1/csi.sock] [--node-id sandbox]
//
// A test steers it through the state directory's control.json (see
// csistate.Control), which it reads on every call.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.endpoint, "endpoint", "", "unix socket to serve on, a path or unix:///path (default: csi.sock in the state dir, see csistate.Layout.SocketPath)")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "directory holding the volumes, snapshots and control.json (required)")
	flag.StringVar(&cfg.nodeID, "node-id", "sandbox", "node ID that NodeGetInfo reports")
	flag.StringVar(&cfg.registrationDir, "kubelet-registration-dir", "", "the kubelet's plugins_registry directory: register the driver with that kubelet")
	flag.Parse()
	logger := log.New(os.Stderr, "csidriver: ", log.LstdFlags|log.Lmicroseconds)

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	d, err := startDriver(cfg, logger)
	if err != nil {
		logger.Fatal(err)
	}
	select {
	case <-ctx.Done():
		logger.Print("stopping")
		d.stop()
	case <-d.served:
		d.stop()
		logger.Fatalf("serve: %v", d.serveErr)
	}
}
