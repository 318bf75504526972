// Package controller is the Kubernetes door onto cairn: it turns Backup
// and Restore resources (cairn.io/v1alpha1) into runs through the starter
// client, one workflow per resource, and writes each run's outcome back
// into the resource's status. It waits on runs with Temporal's long poll,
// so a resource costs nothing while its run works and its status changes
// only when the run starts and ends.
package controller
