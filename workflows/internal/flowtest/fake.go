// Package flowtest holds what the workflow packages' tests share: fake
// activities registered under the names of the real ones, and test data.
package flowtest

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/workflows"
)

// Fake registers fake on env under the name of the activity real, a
// method value such as storeActs.FinalizeBackup.
func Fake(env *testsuite.TestWorkflowEnvironment, real, fake any) {
	env.RegisterActivityWithOptions(fake, activity.RegisterOptions{Name: workflows.ActivityName(real)})
}
