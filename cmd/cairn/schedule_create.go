package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
)

func newScheduleCreateCommand(g *globals) *cobra.Command {
	sf := &scheduleFlags{}
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a backup schedule",
		Long: `Creates a backup schedule. NAME is a DNS-1123 label of at most 48 characters:
each run's backup is NAME-YYYYMMDDhhmmss (UTC).

When: --cron (five fields, read in --time-zone) or --every.
Retention: by count, by size (--max-total-size) or by age (--max-age);
plus --keep-failed failed runs (default 1). By count is --keep-last N, the
calendar rules --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly
and --keep-yearly N (the newest backup of each of the last N hours, days,
ISO weeks, months, years that have one, in --time-zone), or both: a
backup any of them keeps stays. The newest successful backup always
stays. Each backup also expires after --ttl, which must outlive the
longest calendar rule (--keep-monthly 12 needs a --ttl of about a year).
Overlap, when a run is due while the previous one still runs:
  skip        drop the due run (default)
  buffer-one  start it when the running one ends
  allow-all   start it at once
The backup flags (namespaces, resources, selectors) are those of
'cairn backup create'. A schedule of that name existing already is a
conflict (exit code 3): change it with 'cairn schedule update'.`,
		Example: `  cairn schedule create nightly --cron "0 2 * * *" --time-zone Europe/Berlin \
      --include-namespaces shop --keep-last 7 --max-run-duration 1h
  cairn schedule create hourly --every 1h --max-age 48h --exclude-resources secrets
  cairn schedule create gfs --cron "0 * * * *" --time-zone Europe/Berlin --keep-hourly 24 \
      --keep-daily 7 --keep-weekly 4 --keep-monthly 12 --ttl 9000h
  cairn schedule create big --cron @daily --max-total-size 50Gi --keep-failed 3`,
		Args: exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			sf.spec.Name = args[0]
			if err := sf.apply(cmd.Flags().Changed); err != nil {
				return err
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			res, err := sc.CreateSchedule(cmd.Context(), sf.spec)
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), res, func(w io.Writer) {
				fmt.Fprintf(w, "Schedule %q created.\n", res.Name)
				if res.UIURL != "" {
					fmt.Fprintf(w, "  Temporal UI: %s\n", res.UIURL)
				}
				fmt.Fprintf(w, "  Follow it:   cairn schedule describe %s\n", res.Name)
			})
		},
	}
	sf.register(cmd.Flags())
	out.register(cmd)
	return cmd
}

func newScheduleUpdateCommand(g *globals) *cobra.Command {
	sf := &scheduleFlags{}
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "update NAME",
		Short: "Change a backup schedule; flags not given keep their values",
		Long: `Changes a schedule. Only the flags given change: --every replaces --cron and
the other way round, and one retention kind replaces another. Runs already
going keep the spec they started with. --max-run-duration 0 turns the
duration check off. Use pause and unpause to stop and resume it.`,
		Example: `  cairn schedule update nightly --keep-last 14
  cairn schedule update nightly --cron "30 1 * * *" --max-run-duration 2h`,
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
			current, err := sc.GetSchedule(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			spec, err := overlay(cmd, current.Spec)
			if err != nil {
				return err
			}
			v, err := sc.UpdateSchedule(cmd.Context(), args[0], spec)
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), v, func(w io.Writer) { describeSchedule(w, v) })
		},
	}
	sf.register(cmd.Flags())
	_ = cmd.Flags().MarkHidden("paused")
	out.register(cmd)
	return cmd
}

func newSchedulePauseCommand(g *globals, pause bool) *cobra.Command {
	var note string
	verb, call := "unpause", starter.Service.UnpauseSchedule
	short := "Let a paused schedule start runs again from its next due time"
	if pause {
		verb, call = "pause", starter.Service.PauseSchedule
		short = "Stop a schedule from starting runs (a running one goes on)"
	}
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  exactName,
		RunE: actionRunE(g, func(cmd *cobra.Command, sc starter.Service, name string) (string, error) {
			if _, err := call(sc, cmd.Context(), name, note); err != nil {
				return "", err
			}
			return fmt.Sprintf("Schedule %q %sd.", name, verb), nil
		}),
	}
	cmd.Flags().StringVar(&note, "note", "", "why, shown with the schedule in the Temporal UI")
	return cmd
}

func newScheduleTriggerCommand(g *globals) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "trigger NAME",
		Short: "Run a schedule's backup now",
		Long: `Starts a run now, under the schedule's overlap policy: with skip and a run
still going nothing starts and the exit code is 3; with buffer-one it starts
when the running one ends. Retention applies after it, as for any run.`,
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
			res, err := sc.TriggerSchedule(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), res, func(w io.Writer) {
				if res.Backup == "" {
					fmt.Fprintf(w, "Run of schedule %q requested; it starts when the overlap policy allows.\n", res.Schedule)
					return
				}
				fmt.Fprintf(w, "Backup %q started by schedule %q.\n", res.Backup, res.Schedule)
				if res.UIURL != "" {
					fmt.Fprintf(w, "  Temporal UI: %s\n", res.UIURL)
				}
				fmt.Fprintf(w, "  Follow it:   cairn backup describe %s\n", res.Backup)
			})
		},
	}
	out.register(cmd)
	return cmd
}

func newScheduleDeleteCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a schedule; its backups stay until they expire",
		Long: `Deletes the schedule: no more runs start. A run already going finishes, and
the schedule's backups stay in the location until their TTL, or until
'cairn backup delete'.`,
		Args: exactName,
		RunE: actionRunE(g, func(cmd *cobra.Command, sc starter.Service, name string) (string, error) {
			if _, err := sc.DeleteSchedule(cmd.Context(), name); err != nil {
				return "", err
			}
			return fmt.Sprintf("Schedule %q deleted; its backups stay until they expire.", name), nil
		}),
	}
}
