package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestARetryRemovesThePartsItDidNotStoreAgain: an attempt stores all ten
// pages of ConfigMaps and is lost. By the retry, the type has shrunk to
// eight pages and the sixth page's objects are labelled to be excluded.
// The retry, whether it resumes at the fifth page or lists the type
// afresh, leaves only its own pages: no object of the two pages gone,
// none of the excluded page, every other object once.
func TestARetryRemovesThePartsItDidNotStoreAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		last CollectProgress
	}{
		{"resumed at the fifth page", CollectProgress{Current: TypeProgress{Resource: "configmaps", Part: 4, Continue: "t4",
			Items: 4 * perPage, Parts: 4}}},
		// The heartbeat names only another type: ConfigMaps starts over.
		{"listed afresh", CollectProgress{Later: []v1alpha1.TypeCollected{{Resource: "things0"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCollectFixture(t)
			f.in.Types = append(f.in.Types, emptyTypes(1)...)
			_, err := f.attempt(nil)
			require.NoError(t, err)
			require.Equal(t, pages, f.storedParts())

			f.lister.pages = pages - 2
			f.lister.labels = map[string]map[string]string{}
			for i := range perPage {
				f.lister.labels[fmt.Sprintf("cm-05-%d", i)] = map[string]string{"velero.io/exclude-from-backup": "true"}
			}
			res, err := f.attempt(&tc.last)
			require.NoError(t, err)
			assert.Equal(t, (pages-3)*perPage, res.Items)

			stored := f.stored()
			var wrong []string
			for page := range pages {
				for i := range perPage {
					name := fmt.Sprintf("shop/cm-%02d-%d", page, i)
					want := 1
					if page == 5 || page >= pages-2 {
						want = 0 // excluded, or gone by the retry
					}
					if stored[name] != want {
						wrong = append(wrong, fmt.Sprintf("%s stored %d times, not %d", name, stored[name], want))
					}
				}
			}
			assert.Empty(t, wrong)
			assert.Equal(t, pages-3, f.storedParts())
			f.assertSegmentsHoldTheParts()
		})
	}
}
