// Package webhook is cairn's admission webhook, served by `cairn api`. It
// records in each Backup, Restore and Schedule whom the resource acts as
// (its creator, as the API server names them), refuses any later change
// to that record, and refuses resources of a namespace that reach beyond
// it. The controller runs a resource outside cairn's namespace only when
// this webhook was in front of its creation (InForce).
package webhook
