package workflows

import (
	"reflect"
	"runtime"
	"strings"
)

// ActivityName is the name Temporal gives the activity fn, a method value
// such as (*store.Activities)(nil).FinalizeBackup: the method's name, as
// the SDK derives it when a workflow calls or a worker registers fn. Tests
// use it to find an activity in a run's history.
func ActivityName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}
