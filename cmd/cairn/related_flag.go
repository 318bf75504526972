package main

import (
	"github.com/spf13/pflag"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// relatedFlag is --related-cluster-resources of backups and schedules.
type relatedFlag struct{ on bool }

func (r *relatedFlag) register(f *pflag.FlagSet) {
	f.BoolVar(&r.on, "related-cluster-resources", true, "with --cluster-resources auto, also take what the namespaces' workloads need elsewhere: "+
		"ClusterRoleBindings of their service accounts, the ClusterRoles bound, the storage, priority, runtime and ingress classes they name")
}

func (r *relatedFlag) apply(changed func(string) bool, spec *v1alpha1.BackupSpec) {
	if changed("related-cluster-resources") {
		on := r.on
		spec.RelatedClusterResources = &on
	}
}
