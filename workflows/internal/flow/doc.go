// Package flow holds the workflow-side helpers every domain's workflows
// share: activity options, failure messages, progress signals, the phase
// search attribute and the deletion of backups through child workflows.
package flow
