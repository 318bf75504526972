package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/internal/sealing"
)

func newEncryptionKeyCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "encryption-key",
		Short: "Make and inspect the keys that encrypt backups at rest",
		Long: `A key file is an age identity file (age-encryption.org): one secret key per
line, # comments allowed. Given to every cairn process with --encryption-key,
its first key encrypts what a backup writes outside kopia's repository (the
resources tarball, results, logs, etcd snapshots); every key in it decrypts.
backup.json records the ID of the key that encrypted the backup.

Rotate a key: generate a new one, put it first in the file, keep the old keys
below it for as long as backups written with them remain.`,
	}
	generate := &cobra.Command{
		Use:   "generate",
		Short: "Print a new key file to stdout",
		Example: `  cairn encryption-key generate > key.txt
  kubectl -n cairn create secret generic cairn-encryption-key --from-file=key.txt`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := sealing.Generate()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	id := &cobra.Command{
		Use:   "id [FILE]",
		Short: "Print the IDs of a key file's keys, the encrypting one first",
		Long:  "Print the IDs of the keys in FILE (default: --encryption-key), to compare with a backup.json's encryptionKeyID.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{fmt.Errorf("expected at most one FILE argument, got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path := g.keyFile()
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				return &usageError{fmt.Errorf("no key file: name one, or set --encryption-key")}
			}
			k, err := sealing.LoadKeyring(path)
			if err != nil {
				return &usageError{err}
			}
			for _, id := range k.IDs() {
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			return nil
		},
	}
	cmd.AddCommand(generate, id)
	return cmd
}
