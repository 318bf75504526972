package filter

// excludeLabels keep an object out of a backup, whatever its filters
// select, when set to "true": cairn's, and Velero's so that objects
// labelled for Velero stay out of cairn's backups too.
var excludeLabels = []string{"cairn.io/exclude-from-backup", "velero.io/exclude-from-backup"}

// ExcludedBy returns the label that keeps an object with these labels
// out of a backup, "" when none does.
func ExcludedBy(labels map[string]string) string {
	for _, l := range excludeLabels {
		if labels[l] == "true" {
			return l
		}
	}
	return ""
}
