package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/workflows"
)

// CollectProgress is the heartbeat of a collect activity: enough to resume
// a retried attempt at the page after the last one stored.
type CollectProgress struct {
	// Shard is the index of the namespace being listed (0 for a
	// cluster-wide list), Part the next page number within it.
	Shard    int    `json:"shard"`
	Part     int    `json:"part"`
	Continue string `json:"continue,omitempty"`
	// Items stored in the parts before Part.
	Items    int `json:"items"`
	Parts    int `json:"parts"`
	Restarts int `json:"restarts,omitempty"`
	// Excluded are the objects an exclusion label kept out, the first
	// maxNamedExclusions of ExcludedTotal.
	Excluded      []ExcludedItem `json:"excluded,omitempty"`
	ExcludedTotal int            `json:"excludedTotal,omitempty"`
	// Forbidden are the shards' namespaces ("" for a cluster-wide list)
	// the run's caller may not list, and the API server's first answer.
	Forbidden       []string `json:"forbidden,omitempty"`
	ForbiddenReason string   `json:"forbiddenReason,omitempty"`
	Reachability
}

// maxNamedExclusions bounds the excluded objects a type's result names
// (and its heartbeat carries); the rest are counted.
const maxNamedExclusions = 100

// ExcludedItem is an object an exclusion label kept out of a backup.
type ExcludedItem struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Label     string `json:"label"`
}

func (p *CollectProgress) exclude(it kube.Item, label string) {
	p.ExcludedTotal++
	if len(p.Excluded) < maxNamedExclusions {
		p.Excluded = append(p.Excluded, ExcludedItem{Namespace: it.Namespace, Name: it.Name, Label: label})
	}
}

// TypeResult is the per-type outcome stored in the location for finalize.
type TypeResult struct {
	Resource string   `json:"resource"`
	Items    int      `json:"items"`
	Errors   []string `json:"errors,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Excluded are objects an exclusion label kept out, the first of
	// ExcludedTotal.
	Excluded      []ExcludedItem `json:"excluded,omitempty"`
	ExcludedTotal int            `json:"excludedTotal,omitempty"`
}

// CollectResources lists one resource type page by page and stores each
// page as a part. Parts have deterministic names and are written before
// the heartbeat that records them, so a retry that resumes from the last
// heartbeat overwrites at most the page it repeats: nothing is duplicated.
func (a *Activities) CollectResources(ctx context.Context, in workflows.CollectInput) (*workflows.CollectResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeLocation, err)
	}
	defer run.End()
	gr := in.Type.GroupResource()
	log := run.Log.With(zap.String("resource", gr))

	var plan StoredPlan
	if err := run.Loc.ReadJSON(ctx, run.Keys.Plan(), &plan); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	c, err := newCollector(a, in, &plan, run, log)
	if err != nil {
		return nil, err
	}
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &c.progress); err == nil {
			log.Info("Resuming collection", zap.Int("shard", c.progress.Shard), zap.Int("part", c.progress.Part), zap.Int("items", c.progress.Items))
		}
	} else {
		log.Info("Collecting")
	}

	res, err := c.collect(ctx)
	if err != nil {
		return nil, err
	}
	tr := TypeResult{Resource: gr, Items: res.Items, Excluded: c.progress.Excluded, ExcludedTotal: c.progress.ExcludedTotal}
	if res.Error != "" {
		tr.Errors = []string{res.Error}
	}
	if err := run.Loc.WriteJSON(ctx, run.Keys.TypeResult(gr), tr); err != nil {
		return nil, err
	}
	log.Info("Collected", zap.Int("items", res.Items), zap.Int("parts", res.Parts), zap.Int("restarts", res.Restarts))
	return res, nil
}

type collector struct {
	a      *Activities
	lister kube.Lister
	// actingAsCaller: the run impersonates its caller, whose Forbidden
	// is a namespace left out, not the worker's misconfiguration.
	actingAsCaller bool
	in             workflows.CollectInput
	res            kube.Resource
	gr             string
	run            *runlog.Run
	log            *zap.Logger
	shards         []string
	nsGlobs        filter.Globs
	labels         filter.Labels
	isNSType       bool
	progress       CollectProgress
}

func newCollector(a *Activities, in workflows.CollectInput, plan *StoredPlan, run *runlog.Run, log *zap.Logger) (*collector, error) {
	t := in.Type
	nsGlobs, err := filter.NewGlobs(plan.Spec.IncludedNamespaces, plan.Spec.ExcludedNamespaces)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidSpec, err)
	}
	labels, err := filter.NewLabels(plan.Spec.LabelSelector, plan.Spec.OrLabelSelectors)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidSpec, err)
	}
	lister, err := actas.Lister(a.Clients, a.Lister, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	c := &collector{
		a:              a,
		lister:         lister,
		actingAsCaller: in.Options.ActingAs != nil,
		in:             in,
		res: kube.Resource{
			GVR:        schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource},
			Kind:       t.Kind,
			Namespaced: t.Namespaced,
		},
		gr:       t.GroupResource(),
		run:      run,
		log:      log,
		nsGlobs:  nsGlobs,
		labels:   labels,
		isNSType: t.GroupResource() == "namespaces",
		shards:   []string{""},
	}
	if t.Namespaced && !plan.AllNamespaces {
		c.shards = plan.Namespaces
	}
	return c, nil
}

func (c *collector) collect(ctx context.Context) (*workflows.CollectResult, error) {
	p := &c.progress
	var ahead <-chan fetched
	for p.Shard < len(c.shards) {
		page, err := c.nextPage(ctx, ahead)
		ahead = nil
		switch {
		case err == nil:
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			// The continue token outlived etcd's compaction: list the type
			// again from the start, dropping what was stored, so no object
			// is stored twice.
			c.log.Warn("Continue token expired, listing the type again", zap.Error(err))
			if derr := c.run.Loc.DeletePrefix(ctx, c.run.Keys.PartsPrefix(c.gr), nil); derr != nil {
				return nil, derr
			}
			*p = CollectProgress{Restarts: p.Restarts + 1}
			c.heartbeat(ctx)
			continue
		case c.actingAsCaller && apierrors.IsForbidden(err):
			c.forbid(ctx, err)
			continue
		case kube.IsTypeLevel(err):
			return &workflows.CollectResult{Resource: c.gr, Items: p.Items, Parts: p.Parts, Error: err.Error(), Restarts: p.Restarts}, nil
		default:
			return nil, err
		}
		// The next request goes out while this page is stored, unless the
		// worker is told to spare the API server.
		if shard, cont, more := c.following(page); more && c.a.PageInterval <= 0 {
			ahead = c.readAhead(ctx, shard, cont)
		}

		lines := c.select_(page, p)
		if len(lines) > 0 {
			if err := c.run.Loc.WriteAll(ctx, c.run.Keys.Part(c.gr, p.Shard, p.Part), lines); err != nil {
				return nil, err
			}
			p.Parts++
		}
		p.Items += bytes.Count(lines, []byte{'\n'})
		p.Part++
		p.Continue = page.Continue
		if p.Continue == "" {
			p.Shard, p.Part = p.Shard+1, 0
		}
		c.heartbeat(ctx)
		if err := clock.Sleep(ctx, c.a.PageInterval); err != nil {
			return nil, err
		}
	}
	return &workflows.CollectResult{Resource: c.gr, Items: p.Items, Parts: p.Parts, Restarts: p.Restarts, Skipped: c.skipReason()}, nil
}

// forbid records that the caller may not list the current shard and
// moves on to the next one: the backup holds what the caller could read.
func (c *collector) forbid(ctx context.Context, err error) {
	p := &c.progress
	c.log.Warn("The run's caller may not list this type here", zap.String("namespace", c.shards[p.Shard]), zap.Error(err))
	p.Forbidden = append(p.Forbidden, c.shards[p.Shard])
	if p.ForbiddenReason == "" {
		p.ForbiddenReason = err.Error()
	}
	p.Shard, p.Part, p.Continue = p.Shard+1, 0, ""
	c.heartbeat(ctx)
}

// skipReason says where the caller may not list the type, with the API
// server's answer; "" when it could list it everywhere.
func (c *collector) skipReason() string {
	p := c.progress
	if len(p.Forbidden) == 0 {
		return ""
	}
	where := "cluster-wide"
	if p.Forbidden[0] != "" {
		where = "in namespaces " + strings.Join(p.Forbidden, ", ")
	}
	return fmt.Sprintf("%s may not list %s %s: %s", c.in.Options.ActingAs.Username, c.gr, where, p.ForbiddenReason)
}

// select_ keeps the page's items the spec selects, as JSON lines, and
// records in p those an exclusion label keeps out.
func (c *collector) select_(page *kube.Page, p *CollectProgress) []byte {
	var buf bytes.Buffer
	for _, it := range page.Items {
		if !c.selected(it) {
			continue
		}
		if label := filter.ExcludedBy(it.Labels); label != "" {
			p.exclude(it, label)
			continue
		}
		buf.Write(it.Raw)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// selected reports whether the spec's filters select it.
func (c *collector) selected(it kube.Item) bool {
	switch {
	case c.isNSType:
		// Namespace objects follow the namespace filter, not labels, so
		// a restore can recreate the namespaces it restores into.
		return c.nsGlobs.Match(it.Name)
	case c.res.Namespaced && !c.nsGlobs.Match(it.Namespace):
		return false
	}
	return c.labels.Match(it.Labels)
}

func (c *collector) heartbeat(ctx context.Context) { activity.RecordHeartbeat(ctx, c.progress) }
