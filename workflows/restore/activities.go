package restore

import (
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/hooks"
	restoreacts "github.com/cairn-backup/cairn/activities/restore"
)

// The activities this package's workflows run, referenced by method value
// on nil receivers (the activity's name is the method's): the compiler
// checks every name, and the SDK checks the arguments against the
// method's signature when the workflow calls it.
var (
	exposeActs  *expose.Activities
	hookActs    *hooks.Activities
	restoreActs *restoreacts.Activities
)
