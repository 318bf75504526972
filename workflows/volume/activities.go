package volume

import (
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/activities/expose"
)

// The activities this package's workflows run, referenced by method value
// on nil receivers (the activity's name is the method's): the compiler
// checks every name, and the SDK checks the arguments against the
// method's signature when the workflow calls it.
var (
	csiActs       *csi.Activities
	datamoverActs *datamover.Activities
	exposeActs    *expose.Activities
)
