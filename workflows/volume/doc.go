// Package volume holds the workflows of one volume: its CSI snapshot and
// data upload (VolumeSnapshot), its restore into a new volume
// (VolumeRestore), and the per-node data mover slots (DataMoverSlots).
package volume
