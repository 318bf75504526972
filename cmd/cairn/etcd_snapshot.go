package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// etcdSnapshots is what the shared get, describe and --wait code needs of
// an etcd snapshot.
var etcdSnapshots = runKind[*starter.EtcdSnapshotView]{
	name:  "etcd-snapshot",
	get:   starter.Service.GetEtcdSnapshot,
	phase: func(v *starter.EtcdSnapshotView) v1alpha1.Phase { return v.Phase },
	progress: func(v *starter.EtcdSnapshotView) string {
		if s := v.Status; s != nil && s.Bytes > 0 {
			return fmt.Sprintf("%s: %d bytes, verified %t", v.Phase, s.Bytes, s.Verified)
		}
		return string(v.Phase)
	},
	describe: describeEtcdSnapshot,
}

func newEtcdSnapshotCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd-snapshot",
		Short: "Take, list and delete snapshots of the cluster's etcd",
		Long: `For clusters whose etcd you run: the worker streams a snapshot through
etcd's maintenance API (--etcd-endpoints, --etcd-ca, --etcd-cert, --etcd-key
of 'cairn worker') into etcd/<name>/snapshot.db of the location, reads the
stored copy back to check its size, SHA-256 and etcd's own integrity trailer,
and only then writes etcd/<name>/snapshot.json and calls it Completed.
Restore it with 'etcdutl snapshot restore snapshot.db'.

Snapshots expire after --ttl like backups, and a schedule with --kind
etcd-snapshot takes them on a schedule with the same retention policies.

Exit codes: 0 ok, 1 error, 2 invalid input, 3 conflict, 4 not found,
6 snapshot ended Failed/Canceled (--wait).`,
	}
	cmd.AddCommand(newEtcdSnapshotCreateCommand(g),
		newShowCommand(g, etcdSnapshots, "get NAME", "Show one etcd snapshot as a table row (or its full record with -o json|yaml)",
			func(w io.Writer, v *starter.EtcdSnapshotView) { etcdSnapshotTable(w, []*starter.EtcdSnapshotView{v}) }),
		newShowCommand(g, etcdSnapshots, "describe NAME", "Show an etcd snapshot in detail", describeEtcdSnapshot),
		newListCommand(g, "List etcd snapshots, newest first", starter.Service.ListEtcdSnapshots,
			func(w io.Writer, l *starter.EtcdSnapshotList, location string) {
				if len(l.Items) == 0 {
					fmt.Fprintf(w, "No etcd snapshots in Temporal or in %s.\n", location)
					return
				}
				etcdSnapshotTable(w, l.Items)
				printUnreadable(w, l.Unreadable)
			}),
		newEtcdSnapshotDeleteCommand(g))
	return cmd
}

func newEtcdSnapshotCreateCommand(g *globals) *cobra.Command {
	var spec v1alpha1.EtcdSnapshotSpec
	var ttl time.Duration
	var wait bool
	var out outputFlag
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Take an etcd snapshot now",
		Example: "  cairn etcd-snapshot create before-upgrade --wait\n  cairn etcd-snapshot create weekly --ttl 2160h",
		Args:    exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			spec.Name = args[0]
			if cmd.Flags().Changed("ttl") {
				spec.TTL = &metav1.Duration{Duration: ttl}
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			res, err := sc.CreateEtcdSnapshot(cmd.Context(), spec)
			if err != nil {
				return err
			}
			if !wait {
				return out.print(cmd.OutOrStdout(), res, func(w io.Writer) { printCreated(w, "etcd-snapshot", res) })
			}
			return waitFor(cmd, sc, etcdSnapshots, res.Name, &out)
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", v1alpha1.DefaultTTL, "how long the snapshot is kept")
	cmd.Flags().StringVar(&spec.StorageLocation, "storage-location", "", "backup location URL (default: --location)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the snapshot is stored and verified; the exit code tells how it ended")
	out.register(cmd)
	return cmd
}

func newEtcdSnapshotDeleteCommand(g *globals) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an etcd snapshot from its location",
		Args:  exactName,
		RunE: actionRunE(g, func(cmd *cobra.Command, sc starter.Service, name string) (string, error) {
			res, err := sc.DeleteEtcdSnapshot(cmd.Context(), name)
			if err != nil {
				return "", err
			}
			if !wait {
				return fmt.Sprintf("Deletion of etcd snapshot %q started.", name), nil
			}
			if err := sc.WaitRun(cmd.Context(), res.WorkflowID, res.RunID); err != nil {
				return "", fmt.Errorf("delete etcd snapshot %s: %w", name, err)
			}
			return fmt.Sprintf("etcd snapshot %q deleted.", name), nil
		}),
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the deletion is done")
	return cmd
}

func etcdSnapshotTable(w io.Writer, items []*starter.EtcdSnapshotView) {
	row(w, "NAME", "PHASE", "SIZE", "REVISION", "VERIFIED", "STARTED", "EXPIRES")
	for _, v := range items {
		size, rev, verified, expires := "-", "-", "-", "-"
		if s := v.Status; s != nil {
			if s.Bytes > 0 {
				size, rev = fmt.Sprint(s.Bytes), fmt.Sprint(s.Revision)
			}
			verified, expires = fmt.Sprint(s.Verified), until(s.Expiration)
		}
		row(w, v.Name, string(v.Phase), size, rev, verified, age(v.StartTime), expires)
	}
}

func describeEtcdSnapshot(w io.Writer, v *starter.EtcdSnapshotView) {
	row(w, "Name:", v.Name)
	row(w, "Phase:", string(v.Phase))
	s := v.Status
	if s != nil && s.FailureReason != "" {
		row(w, "Reason:", s.FailureReason)
	}
	describeTimes(w, v.StartTime, v.EndTime, v.Location, v.UIURL)
	if s == nil {
		return
	}
	row(w, "Expires:", timestamp(s.Expiration))
	row(w, "Endpoint:", orDash(s.Endpoint))
	row(w, "etcd version:", orDash(s.EtcdVersion))
	row(w, "Revision:", fmt.Sprint(s.Revision))
	row(w, "Size:", fmt.Sprintf("%d bytes", s.Bytes))
	row(w, "SHA-256:", orDash(s.SHA256))
	row(w, "Verified:", fmt.Sprint(s.Verified))
}
