package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWorkerRefusesAHeartbeatTimeoutOutOfBounds(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 11 * time.Minute} {
		err := (&workerFlags{heartbeatTimeout: d}).validate()
		var usage *usageError
		assert.True(t, errors.As(err, &usage), "%s: a usage error (exit 2), got %v", d, err)
	}
	assert.NoError(t, (&workerFlags{heartbeatTimeout: 30 * time.Second}).validate())
	assert.NoError(t, (&workerFlags{heartbeatTimeout: 3 * time.Second}).validate())
}
