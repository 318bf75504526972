package location

import (
	"fmt"
	"strings"
)

// Keys of one backup inside a location, as docs/operations.md's "Backup locations"
// lays them out. The ".work/" and ".logs/" prefixes hold a running backup's
// intermediate state; they are removed when the backup ends.
const backupsRoot = "backups/"

// BackupsPrefix is the prefix under which every backup lives.
func BackupsPrefix() string { return backupsRoot }

// Backup returns the key helper for the backup called name.
func Backup(name string) BackupKeys { return BackupKeys{name: name, prefix: backupsRoot + name + "/"} }

// BackupKeys names the objects of one backup.
type BackupKeys struct{ name, prefix string }

func (b BackupKeys) Prefix() string     { return b.prefix }
func (b BackupKeys) Metadata() string   { return b.prefix + "backup.json" }
func (b BackupKeys) Resources() string  { return b.prefix + "resources.tar.gz" }
func (b BackupKeys) Results() string    { return b.prefix + "results.json" }
func (b BackupKeys) Logs() string       { return b.prefix + "logs.jsonl.gz" }
func (b BackupKeys) Volumes() string    { return b.prefix + "volumes.json" }
func (b BackupKeys) Operations() string { return b.prefix + "operations.json" }

// Manifest is manifest.json: the digest of every object above, written
// just before backup.json, which records its SHA-256.
func (b BackupKeys) Manifest() string { return b.prefix + "manifest.json" }

// Stored are the objects a committed backup holds besides backup.json and
// the manifest: what the manifest digests.
func (b BackupKeys) Stored() []string {
	return []string{b.Resources(), b.Results(), b.Logs(), b.Volumes(), b.Operations()}
}

// VeleroMetadata is where Velero keeps a backup's metadata.
func (b BackupKeys) VeleroMetadata() string { return b.prefix + "velero-backup.json" }

// VeleroResources is Velero's name for the resources tarball.
func (b BackupKeys) VeleroResources() string { return b.prefix + b.name + ".tar.gz" }

// Work is the prefix of a running backup's intermediate state.
func (b BackupKeys) Work() string { return b.prefix + ".work/" }

// Plan is the collection plan written by the plan activity.
func (b BackupKeys) Plan() string { return b.Work() + "plan.json" }

// PartsPrefix holds the collected item parts of one resource type.
func (b BackupKeys) PartsPrefix(groupResource string) string {
	return b.Work() + "parts/" + groupResource + "/"
}

// AllParts is the prefix of every collected part.
func (b BackupKeys) AllParts() string { return b.Work() + "parts/" }

// Part is one page of collected items: shard is the namespace index (0
// for cluster-wide lists), index the page number within it. Both are
// zero-padded so lexical order is collection order.
func (b BackupKeys) Part(groupResource string, shard, index int) string {
	return fmt.Sprintf("%s%05d-%06d.jsonl", b.PartsPrefix(groupResource), shard, index)
}

// ShardParts is the prefix of the parts of one shard (the namespace of
// that index in the plan, or 0 for a list of the whole type).
func (b BackupKeys) ShardParts(groupResource string, shard int) string {
	return fmt.Sprintf("%s%05d-", b.PartsPrefix(groupResource), shard)
}

// AdditionalPart is one page of the additional items extensions asked
// for, of one type: after the type's own parts, in their shard's place.
func (b BackupKeys) AdditionalPart(groupResource string, index int) string {
	return b.Part(groupResource, AdditionalShard, index)
}

// AdditionalShard is the shard number of additional items' parts, past
// any namespace index.
const AdditionalShard = 99999

// AdditionalRefs holds the additional items extensions asked for with
// the items of one collected part (partKey).
func (b BackupKeys) AdditionalRefs(partKey string) string {
	return b.AllAdditionalRefs() + strings.TrimPrefix(partKey, b.AllParts())
}

// AdditionalRefsOf is the prefix of the AdditionalRefs of one type.
func (b BackupKeys) AdditionalRefsOf(groupResource string) string {
	return b.AllAdditionalRefs() + groupResource + "/"
}

// AllAdditionalRefs is the prefix of every AdditionalRefs.
func (b BackupKeys) AllAdditionalRefs() string { return b.Work() + "additional/" }

// Segment holds the items of one collected part (partKey) as a tarball
// segment (tarball.NewSegment), for finalize to splice into the tarball
// without reading the part.
func (b BackupKeys) Segment(partKey string) string {
	return b.AllSegments() + strings.TrimSuffix(strings.TrimPrefix(partKey, b.AllParts()), ".jsonl") + ".tar.gz"
}

// SegmentsOf is the prefix of the segments of one type.
func (b BackupKeys) SegmentsOf(groupResource string) string {
	return b.AllSegments() + groupResource + "/"
}

// ShardSegments is the prefix of the segments of one shard's parts.
func (b BackupKeys) ShardSegments(groupResource string, shard int) string {
	return fmt.Sprintf("%s%05d-", b.SegmentsOf(groupResource), shard)
}

// AllSegments is the prefix of every Segment.
func (b BackupKeys) AllSegments() string { return b.Work() + "segments/" }

// ExtensionOperations holds the operations extensions started for the
// items of one collected part (partKey).
func (b BackupKeys) ExtensionOperations(partKey string) string {
	return b.AllExtensionOperations() + strings.TrimPrefix(partKey, b.AllParts())
}

// ExtensionOperationsOf is the prefix of the ExtensionOperations of one
// type.
func (b BackupKeys) ExtensionOperationsOf(groupResource string) string {
	return b.AllExtensionOperations() + groupResource + "/"
}

// AllExtensionOperations is the prefix of every ExtensionOperations.
func (b BackupKeys) AllExtensionOperations() string { return b.Work() + "operations/" }

// OperationsRun holds how the extensions' operations ended, one JSON
// line each, for finalize's operations.json.
func (b BackupKeys) OperationsRun() string { return b.Work() + "operations-run.jsonl" }

// UpdatedPart is one page of the items operations asked to read again,
// of one type: they take the place of the type's own copies.
func (b BackupKeys) UpdatedPart(groupResource string, index int) string {
	return b.Part(groupResource, UpdatedShard, index)
}

// UpdatedShard is the shard number of UpdatedPart, past any namespace
// index and before additional items'.
const UpdatedShard = 99998

// IsUpdatedPart reports whether a part key is an UpdatedPart.
func (b BackupKeys) IsUpdatedPart(key string) bool {
	rest := strings.TrimPrefix(key, b.PartsPrefix(b.GroupResourceOfPart(key)))
	return strings.HasPrefix(rest, updatedShardPrefix)
}

// updatedShardPrefix starts the file name of every UpdatedPart.
var updatedShardPrefix = fmt.Sprintf("%05d-", UpdatedShard)

// TypeResult is the per-resource-type outcome written by collection.
func (b BackupKeys) TypeResult(groupResource string) string {
	return b.Work() + "results/" + groupResource + ".json"
}

// ShareTypeResult is the outcome of share index (of of) of a type
// collected in shares of its namespaces; share 0's is TypeResult.
func (b BackupKeys) ShareTypeResult(groupResource string, index, of int) string {
	if index == 0 {
		return b.TypeResult(groupResource)
	}
	return b.TypeResult(fmt.Sprintf("%s@%d-of-%d", groupResource, index, of))
}

// TypeResults is the prefix of every per-type outcome.
func (b BackupKeys) TypeResults() string { return b.Work() + "results/" }

// LogsPrefix holds log chunks written by each activity attempt.
func (b BackupKeys) LogsPrefix() string { return b.prefix + ".logs/" }

// GroupResourceOfPart returns the group-resource folder a part key sits in.
func (b BackupKeys) GroupResourceOfPart(key string) string {
	rest := strings.TrimPrefix(key, b.AllParts())
	if i := strings.Index(rest, "/"); i >= 0 {
		return rest[:i]
	}
	return rest
}
