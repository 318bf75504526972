package repository

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// EnsureRepository creates the location's kopia repository when it holds
// none and only connects when it does. A backup runs it before its first
// data mover, so data movers only connect: several first uploads at once
// can no longer each create a repository of their own in the same place.
// Calls of this process for the same location take turns.
func (a *Activities) EnsureRepository(ctx context.Context, in v1alpha1.EnsureRepositoryInput) error {
	unlock := a.lock(in.Location)
	defer unlock()
	stop := heartbeatWhileRunning(ctx)
	defer stop()
	cfg := a.Repository
	cfg.Location, cfg.NoCreate = in.Location, false
	repo, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	a.Log.Info("Volume data repository ready", zap.String("backup", in.Backup), zap.String("location", repo.Location()))
	return repo.Close(ctx)
}

// lock takes this process's turn on a location's repository.
func (a *Activities) lock(location string) (unlock func()) {
	a.mu.Lock()
	if a.locks == nil {
		a.locks = map[string]*sync.Mutex{}
	}
	m, ok := a.locks[location]
	if !ok {
		m = &sync.Mutex{}
		a.locks[location] = m
	}
	a.mu.Unlock()
	m.Lock()
	return m.Unlock
}
