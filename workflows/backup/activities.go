package backup

import (
	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/hooks"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/store"
)

// The activities this package's workflows run, referenced by method value
// on nil receivers (the activity's name is the method's): the compiler
// checks every name, and the SDK checks the arguments against the
// method's signature when the workflow calls it.
var (
	clusterActs    *cluster.Activities
	csiActs        *csi.Activities
	hookActs       *hooks.Activities
	repositoryActs *repository.Activities
	storeActs      *store.Activities
)
