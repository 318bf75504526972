// Package objects turns backed-up Kubernetes objects into what a restore
// creates: it strips what the server owns, maps namespaces, resets what
// the target cluster assigns, labels the object with its backup and
// restore, and tells which objects a restore leaves to the cluster. It is
// pure: no API calls, so every rule is unit tested.
package objects
