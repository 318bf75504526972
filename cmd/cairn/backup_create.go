package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

type createFlags struct {
	req                starter.CreateBackupRequest
	clusterResources   string
	ttl                time.Duration
	unreachableTimeout time.Duration
	volumes            volumeFlags
	related            relatedFlag
	wait               bool
	dryRun             bool
	direct             bool
	out                outputFlag
}

func newBackupCreateCommand(g *globals) *cobra.Command {
	cf := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Start a backup",
		Long: `Starts a backup of the objects the filters select. The name must be a DNS-1123
name. Creating the same name again with the same filters returns the existing
backup; with different filters it is a conflict (exit code 3).

Resources are named as 'kubectl api-resources' lists them: "configmaps",
"deployments.apps", or a glob such as "*.example.com". Cluster-scoped objects:
  auto     those related to the selected namespaces: their Namespace objects,
           bound PersistentVolumes, CRDs of backed-up custom resources and
           (unless --related-cluster-resources=false) what their workloads
           need to run in another cluster: the ClusterRoleBindings naming their
           service accounts, the ClusterRoles bound to those and to their
           RoleBindings, the StorageClasses, PriorityClasses, RuntimeClasses and
           IngressClasses their objects name. A restore creates these only
           where missing and never changes them. Everything when all
           namespaces are selected without a label selector
  include  every cluster-scoped type the resource filters select
  exclude  none (Namespace objects are still kept, to restore into)

Volumes: every bound claim the backup holds whose CSI driver has a
VolumeSnapshotClass is snapshotted (one async operation per volume, shown by
'cairn backup describe'). The class is the one the claim's annotation
cairn.io/snapshot-class names, else the driver's class labelled
cairn.io/snapshot-class=true, else the driver's default class. Other claims are
skipped with a warning that names them. --native-snapshots:
  keep         keep every snapshot as long as its backup (default)
  keep-newest  keep the newest N per volume (N: the worker's
               --snapshot-keep-newest); older backups lose their snapshot
  delete       delete each snapshot once its data is moved (needs
               --snapshot-move-data)

--snapshot-move-data also copies each snapshot's data into the location's
kopia repository (encrypted, deduplicated, incremental from the volume's
previous backup), so the backup survives the loss of the cluster's storage. A
data mover started next to the volume does the copy; it must start within
--datamover-prepare-timeout and finish within --datamover-timeout.

File-system backup copies a volume no snapshot can take (an emptyDir, a
local or NFS volume, a CSI volume without snapshots) from its running pod: a
data mover on the pod's node reads the pod's volume directory under the
kubelet's, read-only, into the location's kopia repository, with the pod's
hooks around the copy. A pod opts in with Velero's annotation
backup.velero.io/backup-volumes=a,b (or cairn.io/backup-volumes);
--default-volumes-to-fs-backup copies every volume of every running pod
instead, less the names in backup.velero.io/backup-volumes-excludes. A
snapshotted claim is never copied too; Secret, ConfigMap, projected,
downward API and hostPath volumes never are. A pod that is not Running, or
a name the pod lacks, is a warning.

--resource-policies takes Velero's volume policies (version v1,
volumePolicies): the first policy whose conditions all hold decides whether a
volume is skipped, snapshotted or copied from its pod (fs-backup), e.g.

  version: v1
  volumePolicies:
  - conditions: {storageClass: [scratch]}
    action: {type: skip}
  - conditions: {volumeTypes: [nfs, emptyDir]}
    action: {type: fs-backup}

A skipped volume is a warning of the backup, not an error.
Objects labelled cairn.io/exclude-from-backup=true (or Velero's label) are
left out whatever the filters select.

Where the cluster of the kubeconfig serves cairn's resources (cairn.io/v1alpha1),
the backup is made a Backup resource that cairn's controller runs, as kubectl
apply would: with -n NAMESPACE a team's backup of that namespace only, which
acts as you (the cluster's RBAC decides what it reads), and otherwise one of
--controller-namespace, the cluster's. 'kubectl get backups -A' lists it, and
--wait follows its status. --direct starts the run through Temporal (or
--server) instead; so does --dry-run, and so does a cluster without the types.

--dry-run runs the backup's planning and listing as a short workflow (you
see it in the Temporal UI) and prints what the backup would take: items per
resource type, the related cluster-scoped objects by name, what would happen
to each volume, the pods whose hooks would run, and the warnings. It takes no
snapshot, runs no hook and leaves nothing in the location.`,
		Example: `  cairn backup create shop-1 --include-namespaces shop --wait
  cairn backup create apps --include-namespaces 'team-*' --exclude-resources secrets -l tier=web
  cairn backup create all --ttl 168h --location s3://backups/prod?region=eu-west-1
  cairn backup create db-offsite --include-namespaces db --snapshot-move-data --native-snapshots delete --wait
  cairn backup create apps-data --include-namespaces 'team-*' --resource-policies policies.yaml
  cairn backup create shop-1 --include-namespaces shop --dry-run
  cairn backup create nightly -n team-a --wait`,
		Args: exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.out.validate(); err != nil {
				return err
			}
			cf.req.Name = args[0]
			if cmd.Flags().Changed("cluster-resources") {
				cf.req.ClusterResources = v1alpha1.ClusterResources(cf.clusterResources)
			}
			if cmd.Flags().Changed("ttl") {
				cf.req.TTL = &metav1.Duration{Duration: cf.ttl}
			}
			cf.related.apply(cmd.Flags().Changed, &cf.req.BackupSpec)
			if err := cf.volumes.apply(cmd.Flags().Changed, &cf.req.BackupSpec); err != nil {
				return err
			}
			if cf.unreachableTimeout > 0 {
				cf.req.Options.ClusterUnreachableTimeout = &metav1.Duration{Duration: cf.unreachableTimeout}
			}
			if !cf.dryRun {
				b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: cf.req.Name}, Spec: cf.req.BackupSpec}
				b.Spec.Name = ""
				if handled, err := createAsResource(cmd, g, cf.direct, v1alpha1.ResourceBackups, b, cf.req.Options, cf.wait, &cf.out); handled {
					return err
				}
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			if cf.dryRun {
				report, err := sc.DryRunBackup(cmd.Context(), cf.req)
				if err != nil {
					return err
				}
				return cf.out.print(cmd.OutOrStdout(), report, func(w io.Writer) { describeDryRun(w, report) })
			}
			res, err := sc.CreateBackup(cmd.Context(), cf.req)
			if err != nil {
				return err
			}
			if !cf.wait {
				return cf.out.print(cmd.OutOrStdout(), res, func(w io.Writer) { printCreated(w, "backup", res) })
			}
			if cf.out.format == "table" {
				printCreated(cmd.ErrOrStderr(), "backup", res)
			}
			return waitFor(cmd, sc, backups, res.Name, &cf.out)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cf.req.IncludedNamespaces, "include-namespaces", nil, "namespaces to back up, globs allowed (default: all)")
	f.StringSliceVar(&cf.req.ExcludedNamespaces, "exclude-namespaces", nil, "namespaces to leave out, globs allowed")
	f.StringSliceVar(&cf.req.IncludedResources, "include-resources", nil, "resource types to back up, globs allowed (default: all)")
	f.StringSliceVar(&cf.req.ExcludedResources, "exclude-resources", nil, "resource types to leave out, globs allowed")
	f.StringVar(&cf.clusterResources, "cluster-resources", "auto", "cluster-scoped objects: auto, include or exclude")
	f.StringVarP(&cf.req.LabelSelector, "selector", "l", "", "only objects with these labels (e.g. app=shop,tier!=cache)")
	f.StringArrayVar(&cf.req.OrLabelSelectors, "or-selector", nil, "objects matching any of these selectors (repeat the flag)")
	f.DurationVar(&cf.ttl, "ttl", v1alpha1.DefaultTTL, "how long the backup is kept")
	f.StringVar(&cf.req.StorageLocation, "storage-location", "", "backup location URL (default: --location)")
	f.IntVar(&cf.req.Options.PageSize, "page-size", 0, "objects per LIST page (default 500)")
	f.IntVar(&cf.req.Options.Concurrency, "concurrency", 0, "resource types collected at once (default 4)")
	f.DurationVar(&cf.unreachableTimeout, "cluster-unreachable-timeout", 0, "fail when the API server stays unreachable this long (default 10m)")
	cf.related.register(f)
	cf.volumes.register(f, &cf.req.BackupSpec, &cf.req.Options)
	f.BoolVar(&cf.wait, "wait", false, "show progress until the backup ends; the exit code tells how it ended")
	f.BoolVar(&cf.direct, "direct", false, "start the run through Temporal (or --server) even where the cluster serves Backup resources")
	f.BoolVar(&cf.dryRun, "dry-run", false, "show what the backup would take (types and counts, related objects, volumes, hooks) and take nothing")
	cf.out.register(cmd)
	return cmd
}
