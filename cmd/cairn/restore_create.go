package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

type restoreCreateFlags struct {
	req               starter.CreateRestoreRequest
	namespaceMappings []string
	classMappings     []string
	modifiersFile     string
	modifiersConfig   string
	existingPolicy    string
	clusterResources  string
	restoreStatus     []string
	unreachable       time.Duration
	prepareTimeout    time.Duration
	dataTimeout       time.Duration
	itemOpTimeout     time.Duration
	wait              bool
	dryRun            bool
	direct            bool
	out               outputFlag
}

const restoreCreateLong = `Restores the backup --from-backup (or the newest Completed backup of the schedule
--from-schedule) into the cluster of the worker that runs the
restore. NAME names the restore and must be a DNS-1123 name. Creating the same
NAME again with the same flags returns the existing restore; with different
flags it is a conflict (exit code 3). The backup must have ended Completed or
PartiallyFailed; a cairn backup or one Velero wrote into the location, by name.

Filters select items of the backup. Namespaces are those of the backup, before
--namespace-mappings moves them. Resources are named as 'kubectl api-resources'
lists them ("configmaps", "deployments.apps") or by a glob ("*.example.com").
Cluster-scoped objects:
  auto     those related to the restored namespaces; all of them when every
           namespace is restored
  include  every cluster-scoped object the filters select
  exclude  none but the Namespace objects the restore needs

What a restore does to each object:
  - drops the fields the source cluster's API server set (uid,
    resourceVersion, creationTimestamp, managedFields, ...) and the status,
    except for the resource types --restore-status names
  - resets Service clusterIPs, and nodePorts unless --preserve-nodeports
  - labels it cairn.io/backup-name=<backup> and cairn.io/restore-name=<NAME>
  - never restores nodes, events, leases, CSI nodes and volume attachments,
    nor Endpoints and EndpointSlices their Service's controller maintains,
    nor pods, replica sets, jobs and controller revisions owned by a restored
    controller (it recreates them); these are skipped, with the reason

Order: resource types are applied in the order below, then the others
alphabetically; --resource-priorities replaces the list. CRDs come first, and
the restore waits until they serve before it goes on to the next type:
%s
Objects that already exist in the cluster (--existing-resource-policy):
  none     an existing object identical to the backed-up one counts as
           restored; a different one is left alone and skipped with a warning
  update   an existing object is patched to its backed-up state

Volumes: a claim whose data the backup moved into the location's kopia
repository (backup create --snapshot-move-data) gets a new volume of the
claim's storage class, size and access modes; a data mover writes the data
into it and the claim is created bound to it. Its data mover must start within
--datamover-prepare-timeout and finish within --datamover-timeout. A claim
that already exists keeps its volume (a warning says so). Other claims with a
snapshot the backup kept are provisioned from that snapshot.

--dry-run plans the restore and asks the API server, in its dry-run mode and
as you, what each write would do; it prints per resource type how many objects
would be created, left alone as identical, updated or skipped (and why), the
mappings applied and what the resource modifiers would change. Objects inside
a namespace or of a CRD the restore creates cannot be checked by the server,
and say so. Nothing is written to the cluster, no volume data is restored.

Exit codes: 0 started (with --wait: Completed), 1 error, 2 invalid flags or
spec (nothing started), 3 conflict (the backup is still running or did not
complete, or NAME is taken by another spec), 4 backup not found in the
location, 5 --wait: ended PartiallyFailed, 6 --wait: ended Failed or Canceled.
Where the cluster of the kubeconfig serves cairn's resources (cairn.io/v1alpha1),
the restore is made a Restore resource that cairn's controller runs: with -n
NAMESPACE a team's restore of a backup of that namespace (by its name there)
into it only, acting as you, and otherwise one of --controller-namespace, the
cluster's. --direct starts the run through Temporal (or --server) instead, as
--dry-run always does.

See what happened to every item with 'cairn restore results NAME'.`

func newRestoreCreateCommand(g *globals) *cobra.Command {
	cf := &restoreCreateFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME (--from-backup BACKUP | --from-schedule SCHEDULE)",
		Short: "Start a restore of a backup into the cluster",
		Long:  fmt.Sprintf(restoreCreateLong, indentList(v1alpha1.DefaultResourcePriorities, "  ", 78)),
		Example: `  # Namespace shop of backup nightly, and wait for the outcome
  cairn restore create shop-1 --from-backup nightly --include-namespaces shop --wait

  # The newest Completed backup of schedule nightly (a newer failed run is passed over)
  cairn restore create shop-latest --from-schedule nightly --include-namespaces shop --wait

  # A copy of shop next to the original one
  cairn restore create shop-copy --from-backup nightly --include-namespaces shop \
    --namespace-mappings shop:shop-copy

  # Bring drifted objects back to their backed-up state
  cairn restore create shop-reset --from-backup nightly --include-namespaces shop \
    --existing-resource-policy update

  # What restoring shop into shop-copy would do, without doing it
  cairn restore create shop-copy --from-backup nightly --include-namespaces shop \
    --namespace-mappings shop:shop-copy --dry-run

  # A backup Velero wrote, by its Velero name, from Velero's bucket
  cairn restore create from-velero --from-backup velero-daily-20250601020000 \
    --storage-location 's3://velero-backups?region=eu-west-1'`,
		Args: exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.out.validate(); err != nil {
				return err
			}
			if err := cf.complete(args[0], cmd.Flags().Changed); err != nil {
				return err
			}
			if !cf.dryRun {
				r := &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: cf.req.Name}, Spec: cf.req.RestoreSpec}
				r.Spec.Name = ""
				if handled, err := createAsResource(cmd, g, cf.direct, v1alpha1.ResourceRestores, r, cf.req.Options, cf.wait, &cf.out); handled {
					return err
				}
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			if cf.dryRun {
				report, err := sc.DryRunRestore(cmd.Context(), cf.req)
				if err != nil {
					return err
				}
				return cf.out.print(cmd.OutOrStdout(), report, func(w io.Writer) { describeRestoreDryRun(w, report) })
			}
			res, err := sc.CreateRestore(cmd.Context(), cf.req)
			if err != nil {
				return err
			}
			if !cf.wait {
				return cf.out.print(cmd.OutOrStdout(), res, func(w io.Writer) { printCreated(w, "restore", res) })
			}
			if cf.out.format == "table" {
				printCreated(cmd.ErrOrStderr(), "restore", res)
			}
			return waitFor(cmd, sc, restores, res.Name, &cf.out)
		},
	}
	cf.register(cmd.Flags())
	cf.out.register(cmd)
	return cmd
}

// register adds the flags that make up the request.
func (cf *restoreCreateFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&cf.direct, "direct", false, "start the run through Temporal (or --server) even where the cluster serves Restore resources")
	f.StringVar(&cf.req.BackupName, "from-backup", "", "the backup to restore (this or --from-schedule)")
	f.StringVar(&cf.req.ScheduleName, "from-schedule", "", "restore the newest Completed backup of this schedule instead of --from-backup")
	f.StringSliceVar(&cf.req.IncludedNamespaces, "include-namespaces", nil, "backed-up namespaces to restore, globs allowed (default: all)")
	f.StringSliceVar(&cf.req.ExcludedNamespaces, "exclude-namespaces", nil, "backed-up namespaces to leave out, globs allowed")
	f.StringSliceVar(&cf.req.IncludedResources, "include-resources", nil, "resource types to restore, globs allowed (default: all)")
	f.StringSliceVar(&cf.req.ExcludedResources, "exclude-resources", nil, "resource types to leave out, globs allowed")
	f.StringVarP(&cf.req.LabelSelector, "selector", "l", "", "only objects with these labels (e.g. app=shop,tier!=cache)")
	f.StringArrayVar(&cf.req.OrLabelSelectors, "or-selector", nil, "objects matching any of these selectors (repeat the flag)")
	f.StringSliceVar(&cf.namespaceMappings, "namespace-mappings", nil, "restore namespaces under other names: old:new,...")
	f.StringVar(&cf.modifiersFile, "resource-modifiers", "", "a file of resource modifier rules (Velero's format: version v1, resourceModifierRules) "+
		"that change objects before they are created or compared")
	f.StringVar(&cf.modifiersConfig, "resource-modifier-configmap", "", "a ConfigMap in the worker's namespace holding resource modifier rules, as Velero takes them")
	f.StringSliceVar(&cf.classMappings, "storage-class-mappings", nil, "restore claims, volumes and StatefulSet claim templates of a storage class into another: old:new,... (each new class must exist in the cluster)")
	f.StringVar(&cf.existingPolicy, "existing-resource-policy", string(v1alpha1.ExistingResourceNone), "objects already in the cluster: none (leave them) or update (patch them)")
	f.StringSliceVar(&cf.restoreStatus, "restore-status", nil, "resource types whose status is restored too, globs allowed")
	f.StringVar(&cf.clusterResources, "cluster-resources", string(v1alpha1.ClusterResourcesAuto), "cluster-scoped objects: auto, include or exclude")
	f.BoolVar(&cf.req.AllowPlaintext, "allow-plaintext", false, "restore a backup written without the location's encryption key "+
		"(Velero's, or one from before the key); without it such a backup is refused as corrupt")
	f.BoolVar(&cf.req.PreserveNodePorts, "preserve-nodeports", false, "keep the nodePorts of Services instead of letting the cluster assign new ones")
	f.StringSliceVar(&cf.req.ResourcePriorities, "resource-priorities", nil, "resource types to apply first, in order (replaces the default order)")
	f.StringVar(&cf.req.StorageLocation, "storage-location", "", "location URL holding the backup (default: --location)")
	f.IntVar(&cf.req.Options.Concurrency, "concurrency", 0, "items of one resource type applied at once (default 16)")
	f.IntVar(&cf.req.Options.BatchSize, "batch-size", 0, "items per batch, the unit a retried step resumes after (default 200)")
	f.DurationVar(&cf.unreachable, "cluster-unreachable-timeout", 0, "fail when the API server stays unreachable this long (default 10m)")
	f.DurationVar(&cf.prepareTimeout, "datamover-prepare-timeout", v1alpha1.DefaultDataMoverPrepareTimeout, "how long a volume's data mover may take to start")
	f.DurationVar(&cf.dataTimeout, "datamover-timeout", v1alpha1.DefaultDataMoverTimeout, "how long one volume's data may take to restore, retries included")
	f.DurationVar(&cf.itemOpTimeout, "item-operation-timeout", v1alpha1.DefaultItemOperationTimeout,
		"how long each async operation an extension starts for a restored item may take, retries included")
	f.IntVar(&cf.req.Options.VolumeConcurrency, "volume-concurrency", 0, "volumes whose data is restored at once (default 4; each also waits for a data mover slot on its node)")
	f.BoolVar(&cf.wait, "wait", false, "show progress until the restore ends; the exit code tells how it ended")
	f.BoolVar(&cf.dryRun, "dry-run", false, "show what the restore would create, leave, update or skip per type, as the API server answers it, and write nothing")
}

// complete turns the flags into the request, with flag mistakes as usage
// errors. The spec's own checks are the starter's.
func (cf *restoreCreateFlags) complete(name string, changed func(flag string) bool) error {
	if (cf.req.BackupName == "") == (cf.req.ScheduleName == "") {
		return &usageError{fmt.Errorf("give --from-backup (list backups with 'cairn backup list') or --from-schedule (the newest Completed backup of a schedule), one of them")}
	}
	mapping, err := v1alpha1.ParseNamespaceMapping(cf.namespaceMappings)
	if err != nil {
		return &usageError{fmt.Errorf("--namespace-mappings: %w", err)}
	}
	classes, err := v1alpha1.ParseStorageClassMapping(cf.classMappings)
	if err != nil {
		return &usageError{fmt.Errorf("--storage-class-mappings: %w", err)}
	}
	cf.req.Name = name
	cf.req.NamespaceMapping = mapping
	cf.req.StorageClassMappings = classes
	if cf.req.ResourceModifiers, err = documentRef("resource-modifiers", cf.modifiersFile, cf.modifiersConfig); err != nil {
		return err
	}
	cf.req.ExistingResourcePolicy = v1alpha1.ExistingResourcePolicy(cf.existingPolicy)
	if changed("cluster-resources") {
		cf.req.ClusterResources = v1alpha1.ClusterResources(cf.clusterResources)
	}
	if len(cf.restoreStatus) > 0 {
		cf.req.RestoreStatus = &v1alpha1.ResourceSelector{IncludedResources: cf.restoreStatus}
	}
	if cf.unreachable > 0 {
		cf.req.Options.ClusterUnreachableTimeout = &metav1.Duration{Duration: cf.unreachable}
	}
	if changed("datamover-prepare-timeout") {
		cf.req.DataMoverPrepareTimeout = &metav1.Duration{Duration: cf.prepareTimeout}
	}
	if changed("datamover-timeout") {
		cf.req.DataMoverTimeout = &metav1.Duration{Duration: cf.dataTimeout}
	}
	if changed("item-operation-timeout") {
		cf.req.ItemOperationTimeout = &metav1.Duration{Duration: cf.itemOpTimeout}
	}
	return nil
}

// indentList writes items comma-separated in lines of at most width
// characters, each starting with indent.
func indentList(items []string, indent string, width int) string {
	var b, line strings.Builder
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if line.Len() > 0 && len(indent)+line.Len()+1+len(it) > width {
			b.WriteString(indent + line.String() + "\n")
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(it)
	}
	if line.Len() > 0 {
		b.WriteString(indent + line.String() + "\n")
	}
	return b.String()
}
