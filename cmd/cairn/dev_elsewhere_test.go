//go:build !devserver

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Without cairn-dev beside it, cairn dev says where it looked and how to
// get it.
func TestDevWithoutCairnDevSaysWhatToBuild(t *testing.T) {
	err := execDev()
	assert.ErrorContains(t, err, "cairn dev is not in this build")
	assert.ErrorContains(t, err, "/"+devBinary+" is not beside it ('make build' builds both)")
}
