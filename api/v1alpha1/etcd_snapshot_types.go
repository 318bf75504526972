package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetadataKindEtcdSnapshot heads every snapshot.json.
const MetadataKindEtcdSnapshot = "EtcdSnapshot"

// EtcdSnapshotWorkflowID is the workflow ID of the etcd snapshot called name.
func EtcdSnapshotWorkflowID(name string) string { return "etcd-snapshot/" + name }

// EtcdSnapshotSpec is what a user asks an etcd snapshot for. The etcd
// endpoints and TLS files are the worker's (--etcd-endpoints and friends):
// the worker is what can reach etcd.
type EtcdSnapshotSpec struct {
	Name            string           `json:"name"`
	StorageLocation string           `json:"storageLocation,omitempty"`
	TTL             *metav1.Duration `json:"ttl,omitempty"`
	// Schedule names the schedule that started this snapshot, if any.
	Schedule string `json:"schedule,omitempty"`
}

// WithDefaults fills the fields a user may leave out.
func (s EtcdSnapshotSpec) WithDefaults(defaultLocation string) EtcdSnapshotSpec {
	if s.TTL == nil {
		s.TTL = &metav1.Duration{Duration: DefaultTTL}
	}
	if s.StorageLocation == "" {
		s.StorageLocation = defaultLocation
	}
	return s
}

// Validate checks the spec and returns every problem at once.
func (s EtcdSnapshotSpec) Validate() error {
	problems := nameProblems("name", s.Name)
	if s.TTL != nil && s.TTL.Duration < 0 {
		problems = append(problems, "ttl "+s.TTL.Duration.String()+" must not be negative")
	}
	if len(problems) > 0 {
		return &InvalidSpecError{What: "etcd snapshot", Problems: problems}
	}
	return nil
}

// EtcdSnapshotStatus is what the status query returns and snapshot.json
// records.
type EtcdSnapshotStatus struct {
	Name           string     `json:"name"`
	Phase          Phase      `json:"phase"`
	StartTime      *time.Time `json:"startTime,omitempty"`
	CompletionTime *time.Time `json:"completionTime,omitempty"`
	Expiration     *time.Time `json:"expiration,omitempty"`
	// Endpoint is the etcd member the snapshot was streamed from.
	Endpoint    string `json:"endpoint,omitempty"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Revision is the store revision when the snapshot began; the snapshot
	// holds at least that revision.
	Revision int64 `json:"revision,omitempty"`
	Bytes    int64 `json:"bytes,omitempty"`
	// SHA256 is the hash of the stored file, re-read from the location.
	SHA256 string `json:"sha256,omitempty"`
	// Verified says the stored copy was read back and its hash and etcd's
	// own integrity trailer matched.
	Verified      bool   `json:"verified"`
	FailureReason string `json:"failureReason,omitempty"`
}

// CurrentPhase returns the phase; starter views use it for any run kind.
func (s EtcdSnapshotStatus) CurrentPhase() Phase { return s.Phase }

// EtcdSnapshotMetadata is snapshot.json.
type EtcdSnapshotMetadata struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Name       string             `json:"name"`
	Spec       EtcdSnapshotSpec   `json:"spec"`
	Status     EtcdSnapshotStatus `json:"status"`
	WorkflowID string             `json:"workflowId,omitempty"`
	RunID      string             `json:"runId,omitempty"`
	// EncryptionKeyID is the ID of the key that encrypted what the run
	// wrote besides this document (sealing.KeyID); empty: written in plain.
	EncryptionKeyID string `json:"encryptionKeyID,omitempty"`
}

// EtcdSnapshotRequest is the input of the etcd snapshot workflow.
type EtcdSnapshotRequest struct {
	Spec EtcdSnapshotSpec `json:"spec"`
}

// TakeEtcdSnapshotResult is what streaming a snapshot into the location
// recorded.
type TakeEtcdSnapshotResult struct {
	Endpoint    string `json:"endpoint"`
	EtcdVersion string `json:"etcdVersion"`
	Revision    int64  `json:"revision"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
}

// VerifyEtcdSnapshotInput asks to read a stored snapshot back and check it.
type VerifyEtcdSnapshotInput struct {
	Spec   EtcdSnapshotSpec `json:"spec"`
	Bytes  int64            `json:"bytes"`
	SHA256 string           `json:"sha256"`
}

// CommitEtcdSnapshotInput asks to write snapshot.json.
type CommitEtcdSnapshotInput struct {
	Spec   EtcdSnapshotSpec   `json:"spec"`
	Status EtcdSnapshotStatus `json:"status"`
}
