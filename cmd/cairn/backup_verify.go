package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/workflows"
)

func newBackupVerifyCommand(g *globals) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "verify NAME",
		Short: "Check every stored object of a backup against its manifest",
		Long: `Re-reads every object a committed backup stored (the tarball, results, logs,
volume records) on a worker, and compares its size and SHA-256 with the
manifest that backup.json vouches for. No encryption key is needed: the
digests are of the stored bytes. The verdict is one line naming the objects
that differ.

Exit codes: 0 every object matches (or the backup has no manifest: Velero's,
or cairn's from before manifests, said so), 6 some object differs, 4 no such
backup, 3 it is still running.`,
		Example: `  cairn backup verify nightly
  cairn backup verify nightly -o json`,
		Args: exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			res, err := sc.VerifyBackup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := out.print(cmd.OutOrStdout(), res, func(w io.Writer) { fmt.Fprintln(w, verdict(res)) }); err != nil {
				return err
			}
			if res.Manifest && !res.OK() {
				return &exitError{code: starter.ExitFailed}
			}
			return nil
		},
	}
	out.register(cmd)
	return cmd
}

// verdict is a verification's one line.
func verdict(r *workflows.VerifyBackupResult) string {
	switch {
	case !r.Manifest:
		return fmt.Sprintf("Backup %s has no manifest (written by Velero, or by cairn before manifests): nothing to check it against.", r.Backup)
	case r.OK():
		return fmt.Sprintf("Backup %s verified: %d objects, %d bytes, all as its manifest says.", r.Backup, r.Objects, r.Bytes)
	}
	return fmt.Sprintf("Backup %s differs from its manifest: %s.", r.Backup, strings.Join(r.Differ, "; "))
}
