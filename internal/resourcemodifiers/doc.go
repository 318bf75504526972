// Package resourcemodifiers changes objects on their way into a cluster
// during a restore, following the rules of a resource-modifier document.
//
// The document is Velero's (version v1, top key resourceModifierRules), so
// files written for Velero's restores work unchanged: each rule has
// conditions (groupResource, resourceNameRegex, namespaces, labelSelector,
// matches) and patches of three kinds, JSON Patch (RFC 6902), JSON merge
// patch (RFC 7386) and strategic merge patch. Where Velero's behaviour is
// subtle the same choice is made here; each such place says so.
package resourcemodifiers
