package flowtest

// GroupNames lists, group by group, the name of each element: how a test
// compares the way a workflow splits resource types into activities.
func GroupNames[T any](groups [][]T, name func(T) string) [][]string {
	names := make([][]string, 0, len(groups))
	for _, g := range groups {
		n := make([]string, 0, len(g))
		for _, t := range g {
			n = append(n, name(t))
		}
		names = append(names, n)
	}
	return names
}
