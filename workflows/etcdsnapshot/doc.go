// Package etcdsnapshot holds the EtcdSnapshot workflow: take, verify and
// commit one snapshot of etcd, or discard it.
package etcdsnapshot
