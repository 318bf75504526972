package objects

import "sort"

// Order sorts group-resources into the order a restore applies them:
// those named in priorities first, in that order, then the rest
// alphabetically.
func Order(groupResources, priorities []string) []string {
	rank := map[string]int{}
	for i, p := range priorities {
		if _, dup := rank[p]; !dup {
			rank[p] = i
		}
	}
	out := append([]string(nil), groupResources...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, iok := rank[out[i]]
		rj, jok := rank[out[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return out[i] < out[j]
	})
	return out
}
