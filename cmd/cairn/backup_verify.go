package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

func newBackupVerifyCommand(g *globals) *cobra.Command {
	var out outputFlag
	var full bool
	cmd := &cobra.Command{
		Use:   "verify NAME",
		Short: "Check every stored object of a backup against its manifest",
		Long: `Re-reads every object a committed backup stored (the tarball, results, logs,
volume records) on a worker, and compares its size and SHA-256 with the
manifest that backup.json vouches for. No encryption key is needed: the
digests are of the stored bytes. Moved volume data is checked with kopia's
own verification: every file's contents must be in the repository, and a
sample of the files (all of them with --full) is read back whole. The
verdict is one line naming what differs.

Exit codes: 0 every object matches (or the backup has no manifest: Velero's,
or cairn's from before manifests, said so), 6 some object differs, 4 no such
backup, 3 it is still running.`,
		Example: `  cairn backup verify nightly
  cairn backup verify nightly --full -o json`,
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
			res, err := sc.VerifyBackup(cmd.Context(), args[0], full)
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
	cmd.Flags().BoolVar(&full, "full", false, fmt.Sprintf("read all the moved volume data back, not a %d%% sample", v1alpha1.VerifySamplePercent))
	return cmd
}

// verdict is a verification's one line.
func verdict(r *v1alpha1.VerifyBackupResult) string {
	switch {
	case !r.Manifest:
		return fmt.Sprintf("Backup %s has no manifest (written by Velero, or by cairn before manifests): nothing to check it against.", r.Backup)
	case r.OK():
		line := fmt.Sprintf("Backup %s verified: %d objects, %d bytes, all as its manifest says", r.Backup, r.Objects, r.Bytes)
		if d := r.VolumeData; d != nil {
			line += fmt.Sprintf("; volume data whole: %d snapshots, %d files, %d of %d bytes read back", d.Snapshots, d.Files, d.ReadBytes, d.Bytes)
		}
		return line + "."
	}
	problems := append([]string(nil), r.Differ...)
	if d := r.VolumeData; d != nil {
		for _, e := range d.Errors {
			problems = append(problems, "volume data: "+e)
		}
	}
	if len(problems) > maxVerdictProblems {
		problems = append(problems[:maxVerdictProblems], fmt.Sprintf("and %d more (-o json lists them)", len(problems)-maxVerdictProblems))
	}
	return fmt.Sprintf("Backup %s is not whole: %s.", r.Backup, strings.Join(problems, "; "))
}

// maxVerdictProblems keeps the verdict one readable line.
const maxVerdictProblems = 5
