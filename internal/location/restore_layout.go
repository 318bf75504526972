package location

import "fmt"

const restoresRoot = "restores/"

// RestoresPrefix is the prefix under which every restore lives.
func RestoresPrefix() string { return restoresRoot }

// Restore returns the key helper for the restore called name.
func Restore(name string) RestoreKeys { return RestoreKeys{prefix: restoresRoot + name + "/"} }

// RestoreKeys names the objects of one restore. Like a backup, a running
// restore keeps its intermediate state under ".work/" and ".logs/".
type RestoreKeys struct{ prefix string }

func (r RestoreKeys) Metadata() string { return r.prefix + "restore.json" }
func (r RestoreKeys) Results() string  { return r.prefix + "results.json" }
func (r RestoreKeys) Logs() string     { return r.prefix + "logs.jsonl.gz" }

// Work is the prefix of a running restore's intermediate state.
func (r RestoreKeys) Work() string { return r.prefix + ".work/" }

// LogsPrefix holds log chunks written by each activity attempt.
func (r RestoreKeys) LogsPrefix() string { return r.prefix + ".logs/" }

// Batch is one batch of prepared items of a resource type, written by the
// plan; index is zero-padded so lexical order is apply order.
func (r RestoreKeys) Batch(groupResource string, index int) string {
	return fmt.Sprintf("%sitems/%s/%06d.jsonl", r.Work(), groupResource, index)
}

// Batches is the prefix of every batch.
func (r RestoreKeys) Batches() string { return r.Work() + "items/" }

// Extensions are the extensions registered when the restore was planned:
// one run calls one set throughout.
func (r RestoreKeys) Extensions() string { return r.Work() + "extensions.json" }

// BatchResult holds the item outcomes of one applied batch.
func (r RestoreKeys) BatchResult(groupResource string, index int) string {
	return fmt.Sprintf("%s%06d.jsonl", r.BatchResultsOf(groupResource), index)
}

// BatchResultsOf is the prefix of one type's batch outcomes.
func (r RestoreKeys) BatchResultsOf(groupResource string) string {
	return r.Work() + "results/" + groupResource + "/"
}

// PlanSkips holds the items the plan left out by rule, with the reason.
func (r RestoreKeys) PlanSkips() string { return r.Work() + "plan-skipped.jsonl" }

// Warnings holds the warnings of one restore step, one JSON string per line.
func (r RestoreKeys) Warnings(step string) string { return r.Work() + "warnings/" + step + ".jsonl" }

// AllWarnings is the prefix of every step's warnings.
func (r RestoreKeys) AllWarnings() string { return r.Work() + "warnings/" }

// Relink holds the owner references one batch could not set yet.
func (r RestoreKeys) Relink(groupResource string, index int) string {
	return fmt.Sprintf("%srelink/%s/%06d.jsonl", r.Work(), groupResource, index)
}

// Relinks is the prefix of every pending owner reference.
func (r RestoreKeys) Relinks() string { return r.Work() + "relink/" }

// ExtensionOperations holds the operations extensions started for the
// restored items of one batch.
func (r RestoreKeys) ExtensionOperations(groupResource string, index int) string {
	return fmt.Sprintf("%s%s/%06d.jsonl", r.AllExtensionOperations(), groupResource, index)
}

// AllExtensionOperations is the prefix of every ExtensionOperations.
func (r RestoreKeys) AllExtensionOperations() string { return r.Work() + "operations/" }

// OperationsRun holds how the extensions' operations ended, one JSON
// line each.
func (r RestoreKeys) OperationsRun() string { return r.Work() + "operations-run.jsonl" }

// Operations lists the restore's extension operations and how each
// ended, once the restore has.
func (r RestoreKeys) Operations() string { return r.prefix + "operations.json" }

// Prefix holds everything of the restore.
func (r RestoreKeys) Prefix() string { return r.prefix }

// PlannedTypes lists the types the plan prepared, in restore order: where
// an apply step finds the batches of an item it restores ahead of its
// type, as an extension asked.
func (r RestoreKeys) PlannedTypes() string { return r.Work() + "types.json" }

// Ahead holds the outcome of one item restored ahead of its type's step;
// id names the item within its type.
func (r RestoreKeys) Ahead(groupResource, id string) string {
	return r.AheadOf(groupResource) + id + ".json"
}

// AheadOf is the prefix of the items of a type restored ahead of it.
func (r RestoreKeys) AheadOf(groupResource string) string {
	return r.Work() + "ahead/" + groupResource + "/"
}
