package location

// etcdRoot holds the etcd snapshots of a location, one folder each.
const etcdRoot = "etcd/"

// EtcdSnapshotsPrefix is the prefix under which every etcd snapshot lives.
func EtcdSnapshotsPrefix() string { return etcdRoot }

// EtcdSnapshot returns the key helper for the etcd snapshot called name.
func EtcdSnapshot(name string) EtcdSnapshotKeys {
	return EtcdSnapshotKeys{prefix: etcdRoot + name + "/"}
}

// EtcdSnapshotKeys names the objects of one etcd snapshot.
type EtcdSnapshotKeys struct{ prefix string }

func (e EtcdSnapshotKeys) Prefix() string { return e.prefix }

// Snapshot is the snapshot file as etcd streamed it (etcdutl snapshot
// restore reads it as is).
func (e EtcdSnapshotKeys) Snapshot() string { return e.prefix + "snapshot.db" }

// Metadata is snapshot.json: written last, once the stored copy is
// verified; its presence marks the snapshot as complete.
func (e EtcdSnapshotKeys) Metadata() string { return e.prefix + "snapshot.json" }
