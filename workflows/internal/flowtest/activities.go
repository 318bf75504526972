package flowtest

import (
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/store"
)

// The activities the fakes stand in for, by method value on nil
// receivers, as the workflows reference them.
var (
	csiActs        *csi.Activities
	datamoverActs  *datamover.Activities
	exposeActs     *expose.Activities
	repositoryActs *repository.Activities
	storeActs      *store.Activities
)
