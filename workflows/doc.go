// Package workflows holds what cairn's workflows share with the processes
// that start and run them: the search attributes a run sets and the
// heartbeat timeout its activities use. The workflows live in one package
// per domain below it (backup, restore, volume, schedule, deletion,
// etcdsnapshot), and a domain imports no other; the types they exchange
// are cairn's data model in api/v1alpha1.
package workflows
