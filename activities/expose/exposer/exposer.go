// Package exposer makes a volume's data reachable for a data mover and
// starts one next to it: a claim in the data mover namespace, made from a
// clone of the backup's snapshot (to read) or empty (to restore into),
// and then either a pod that mounts it (Pod) or, in the sandbox, where no
// pod ever runs, a local process that reads the CSI driver's directory
// (Process). Both poll the operation's own task queue. A file-system
// backup exposes nothing: its data mover reads the pod's volume
// directory on the pod's node.
package exposer

import (
	"context"
	"strconv"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Mode is what the data mover does with the volume.
type Mode string

const (
	// Backup reads a clone of a snapshot.
	Backup Mode = "backup"
	// Restore writes into a fresh volume.
	Restore Mode = "restore"
	// FSBackup reads a running pod's volume directory on its node.
	FSBackup Mode = "fs-backup"
	// FSRestore writes into a restored pod's volume directory on its
	// node, then the volume's marker its init container waits for.
	FSRestore Mode = "fs-restore"
)

// OnNode says whether the mode works in a pod's volume directory on its
// node, without a claim of its own.
func (m Mode) OnNode() bool { return m == FSBackup || m == FSRestore }

// Target is one data mover's volume.
type Target struct {
	// Owner is the backup or restore the data mover works for.
	Owner string
	Mode  Mode
	// Namespace is where the claim, snapshot clone and pod are created.
	Namespace string
	// SourceNamespace and Snapshot name the backup's VolumeSnapshot, and
	// SourceClaim the claim it was cut from (backup mode).
	SourceNamespace, Snapshot, SourceClaim string
	// Size is the claim's size in bytes; StorageClass its class.
	Size         int64
	StorageClass string
	// AccessModes of the claim (restore mode: those of the backed-up
	// claim, so the target claim can bind the volume); RWO when empty.
	AccessModes []string
	// Pod (namespace/name) with PodUID runs on Node, where HostDir is
	// its volume's directory (fs-backup and fs-restore modes), and
	// MarkerDir the directory its restore-wait init container watches
	// (fs-restore mode).
	Pod, PodUID, Node, HostDir, MarkerDir string
	// TaskQueue is unique to the operation; Attempt numbers its data
	// movers from 1.
	TaskQueue string
	Attempt   int
}

// Name is the name of the target's claim and snapshot clone: the same
// for every attempt of the operation.
func (t Target) Name() string {
	return "cairn-dm-" + strings.TrimPrefix(t.TaskQueue, "cairn-datamover-")
}

// moverName names the data mover of one attempt.
func (t Target) moverName() string { return t.Name() + "-" + strconv.Itoa(t.Attempt) }

// Started says where a data mover runs.
type Started struct {
	Claim     string
	DataMover string
	Node      string
}

// Exposer exposes volumes to data movers.
type Exposer interface {
	// Node is where the target's data mover will run, for the per-node
	// data mover limit; "" when any node may run it.
	Node(ctx context.Context, t Target) (string, error)
	// Expose creates what the target needs and starts its data mover, or
	// keeps the one already running for the attempt. progress is told what
	// it waits for.
	Expose(ctx context.Context, t Target, progress func(string)) (*Started, error)
	// Diagnose says, for a user, why the target's data mover has not
	// started.
	Diagnose(ctx context.Context, t Target) string
	// StartState looks once at how far the target's data mover got
	// towards running; nothing set: it may still start (its pod is
	// scheduled, pulled, created).
	StartState(ctx context.Context, t Target) (v1alpha1.StartWatchResult, error)
	// Cleanup stops the target's data movers and deletes what Expose
	// created. Deleting what is gone is no error.
	Cleanup(ctx context.Context, t Target, progress func(string)) error
	// HandOver stops the target's data movers and gives the volume they
	// restored into to the claim ref (restore mode); it returns the
	// volume's name.
	HandOver(ctx context.Context, t Target, ref ClaimRef, progress func(string)) (string, error)
	// FinishHandOver checks a handed-over volume's claim (see Volumes).
	FinishHandOver(ctx context.Context, namespace, claim, volume string) (HandOverState, error)
	// DeleteVolume deletes a handed-over volume nothing will bind.
	DeleteVolume(ctx context.Context, name string) error
	// RestoredPod finds where a restored pod waits for a volume's copy
	// (see Volumes), or says what it waits for.
	RestoredPod(ctx context.Context, restore, namespace, name, volume string) (*v1alpha1.PodVolume, string, error)
}
