package starter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TestDottedRunNamesBelongToTheirNamespace(t *testing.T) {
	exclude := v1alpha1.ClusterResourcesExclude
	assert.Empty(t, namespaceScopeProblems("", "nightly", nil, ""), "a plain name through the API")
	assert.NotEmpty(t, namespaceScopeProblems("", "team-a.nightly", nil, ""),
		"through the API nobody takes a name of team-a's Backups")
	assert.Empty(t, namespaceScopeProblems("team-a", "team-a.nightly", []string{"team-a"}, exclude))
	assert.NotEmpty(t, namespaceScopeProblems("team-a", "team-b.nightly", []string{"team-a"}, exclude), "another namespace's name")
	assert.NotEmpty(t, namespaceScopeProblems("team-a", "team-a", []string{"team-a"}, exclude), "a name of no namespace")
	assert.NotEmpty(t, namespaceScopeProblems("team-a", "team-a.nightly", []string{"team-a", "team-b"}, exclude), "another namespace")
	assert.NotEmpty(t, namespaceScopeProblems("team-a", "team-a.nightly", []string{"team-a"}, v1alpha1.ClusterResourcesAuto),
		"cluster-scoped objects")
	assert.NotEmpty(t, restoreScopeProblems("team-a", CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{
		Name: "team-a.back", BackupName: "team-b.nightly", IncludedNamespaces: []string{"team-a"}, ClusterResources: exclude}}),
		"a restore of team-b's backup")
}

// A namespace's list names only its own unreadable backups: not those of
// a namespace whose name merely contains it, nor a whole location.
func TestUnreadableInKeepsTheNamespacesOwn(t *testing.T) {
	all := []string{"team-a.x: bad json", "big-team-a.y: bad json", "location archive: team-a.z: gone",
		"location archive: team-b.w: gone", "location archive: access denied", "plain: bad json"}
	got := unreadableIn(WithNamespace(context.Background(), "team-a"), all)
	assert.Equal(t, []string{"team-a.x: bad json", "location archive: team-a.z: gone"}, got)
	assert.Len(t, unreadableIn(context.Background(), []string{"a: b", "c: d"}), 2, "no namespace: everything")
}
