package httpapi

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// The API's paths under /v1/namespaces/{namespace} speak for one
// namespace: a name in them is the namespace's own, and what they start
// is what a resource of that kind in the namespace would start, checked
// by the same rules as cairn's admission webhook applies to resources.

// ownName is name as a name of namespace ns's own: "x" and "<ns>.x" are
// both x; a dot that names another namespace is left for the checks to
// refuse.
func ownName(ns, name string) string {
	if n, short, ok := v1alpha1.SplitRunName(name); ok && n == ns {
		return short
	}
	return name
}

// runNameIn is the run of namespace ns that name names ("" ns: name).
func runNameIn(ns, name string) string {
	if ns == "" {
		return name
	}
	return v1alpha1.NamespacedRunName(ns, ownName(ns, name))
}

// scopeProblems makes a resource's problems read as the API body's:
// "metadata.name" is its name, and spec fields sit at its top.
func scopeProblems(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	out := make([]string, len(problems))
	for i, p := range problems {
		if rest, ok := strings.CutPrefix(p, "metadata.name"); ok {
			p = "name" + rest
		}
		out[i] = strings.TrimPrefix(p, "spec.")
	}
	return &starter.InvalidError{Problems: out}
}

// scopeBackup makes req, asked of namespace ns, the backup a Backup
// resource of that name in ns would start.
func scopeBackup(ns string, req *starter.CreateBackupRequest) error {
	b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownName(ns, req.Name)}, Spec: req.BackupSpec}
	b.Spec.Name = ""
	if err := scopeProblems(b.NamespaceScopeProblems()); err != nil {
		return err
	}
	req.BackupSpec = b.ScopedToNamespace()
	return nil
}

// scopeRestore makes req, asked of namespace ns, the restore a Restore
// resource of that name in ns would start: a backup of ns, into ns.
func scopeRestore(ns string, req *starter.CreateRestoreRequest) error {
	r := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ownName(ns, req.Name)}, Spec: req.RestoreSpec}
	r.Spec.Name, r.Spec.BackupName = "", ownName(ns, req.BackupName)
	if err := scopeProblems(r.NamespaceScopeProblems()); err != nil {
		return err
	}
	req.RestoreSpec = r.ScopedToNamespace()
	return nil
}

// scopeSchedule makes spec, the schedule name asks of namespace ns, the
// one a Schedule resource of that name in ns would keep.
func scopeSchedule(ns, name string, spec *v1alpha1.ScheduleSpec) error {
	name = ownName(ns, name)
	if own := ownName(ns, spec.Name); own != "" && own != name {
		return &starter.InvalidError{Problems: []string{fmt.Sprintf("name %q in the body differs from %q in the path; a schedule cannot be renamed", spec.Name, name)}}
	}
	sc := &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *spec}
	if err := scopeProblems(sc.NamespaceScopeProblems()); err != nil {
		return err
	}
	*spec = sc.ScopedToNamespace()
	return nil
}
