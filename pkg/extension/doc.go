// Package extension is the contract between cairn and its extensions, for
// extension authors who write them in Go: the activity names an extension
// serves, their requests and answers, and Register, which puts a Handler
// on a Temporal worker. It imports nothing of cairn, so an extension's
// module needs only this package and Temporal's SDK.
//
// An extension is a Temporal worker that polls its own task queue. cairn
// calls it with activities of the names below; an extension in another
// language registers activities of the same names that take and return
// the same JSON (docs/extensions.md is the contract in prose).
//
// The contract is versioned: the activity names carry their version (v1),
// and a later version gets new names beside them, so an extension built
// against v1 keeps working.
package extension
