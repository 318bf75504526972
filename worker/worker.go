// Package worker registers cairn's workflows and activities on their task
// queue and builds the Temporal worker that runs them.
package worker

import (
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/hooks"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Activities are the implementations a worker hosts.
type Activities struct {
	Cluster *cluster.Activities
	Store   *store.Activities
	Restore *restore.Activities
	Etcd    *etcd.Activities
	CSI     *csi.Activities
	Hooks   *hooks.Activities
	Expose  *expose.Activities
	Repo    *repository.Activities
}

// Options tune a worker.
type Options struct {
	// MaxConcurrentActivities bounds activities running at once in this
	// process (0: the SDK default).
	MaxConcurrentActivities int
	// HeartbeatTimeout is how long a silent activity of a run that sets
	// none in its request is presumed alive (0: 30 s); maintenance and
	// verification get twice it. Kill tests set it short.
	HeartbeatTimeout time.Duration
}

// New returns a worker on TaskQueue with everything registered.
func New(c client.Client, acts Activities, opts Options) sdkworker.Worker {
	w := sdkworker.New(c, v1alpha1.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		Interceptors:                       []interceptor.WorkerInterceptor{&errorSurfacer{}, &heartbeatTimeouts{timeout: opts.HeartbeatTimeout}},
	})
	Register(w, acts)
	return w
}
