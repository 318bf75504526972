package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
)

const pages, perPage = 10, 5

// scriptedLister serves ConfigMaps in pages whose continue tokens are
// "t1".."t9", any other type as one empty page, and fails a request once
// where told to.
type scriptedLister struct {
	mu     sync.Mutex
	calls  []string         // the continue token of every ConfigMap request, the resource of any other
	shards []string         // the namespace of every ConfigMap request that starts a list
	failOn map[string]error // token -> error, returned once
	// failTold: token -> error, returned once after the page's own
	// continue token was told, as a page cut short in its items is.
	failTold map[string]error
	// held: token -> closed once the page hold named is asked for; the
	// page is returned only then. asked: that page's token -> the same.
	held, asked map[string]chan struct{}
	// onRequest hears how many ConfigMap requests went out, this one
	// included.
	onRequest func(requested int)
	labels    map[string]map[string]string // object name -> its labels
	pad       int                          // bytes of data each ConfigMap carries
	pages     int                          // ConfigMap pages when set, else pages
	// before, when set, is called first by each request for a type
	// other than ConfigMaps, with the type's resource; its error is the
	// request's.
	before func(ctx context.Context, resource string) error
}

// hold has the page of token page returned only once the page of token
// until has been asked for.
func (l *scriptedLister) hold(page, until string) {
	ch := make(chan struct{})
	l.held, l.asked = map[string]chan struct{}{page: ch}, map[string]chan struct{}{until: ch}
}

func (l *scriptedLister) List(ctx context.Context, r kube.Resource, opts kube.ListOptions) (*kube.Page, error) {
	if l.before != nil && r.GVR.Resource != "configmaps" {
		if err := l.before(ctx, r.GVR.Resource); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := opts.Continue
	if r.GVR.Resource != "configmaps" {
		key = r.GVR.Resource
	}
	l.calls = append(l.calls, key)
	if ch, ok := l.asked[key]; ok {
		close(ch)
		delete(l.asked, key)
	}
	if l.onRequest != nil && key == opts.Continue {
		l.onRequest(l.countRequests())
	}
	if err, ok := l.failOn[key]; ok {
		delete(l.failOn, key)
		return nil, err
	}
	if key != opts.Continue {
		return &kube.Page{}, nil
	}
	idx := 0
	if opts.Continue != "" {
		_, _ = fmt.Sscanf(opts.Continue, "t%d", &idx)
	} else {
		l.shards = append(l.shards, opts.Namespace)
	}
	ns := opts.Namespace
	if ns == "" {
		ns = "shop"
	}
	page := &kube.Page{}
	for i := range perPage {
		name := fmt.Sprintf("cm-%02d-%d", idx, i)
		page.Items = append(page.Items, kube.Item{Name: name, Namespace: ns, Labels: l.labels[name],
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"data":{"x":"` +
				strings.Repeat("x", l.pad) + `"}}`)})
	}
	// As a real lister does, the page carries its items' lines too.
	for _, it := range page.Items {
		page.Lines = append(append(page.Lines, it.Raw...), '\n')
	}
	if last := cmp.Or(l.pages, pages); idx+1 < last {
		page.Continue = fmt.Sprintf("t%d", idx+1)
	}
	// As a real lister does with a built-in type's list, it tells where
	// the next page starts before it returns.
	if opts.Continued != nil {
		opts.Continued(page.Continue)
	}
	if err, ok := l.failTold[key]; ok {
		delete(l.failTold, key)
		return nil, err
	}
	if ch, ok := l.held[key]; ok {
		l.mu.Unlock()
		defer l.mu.Lock()
		// Without the request it waits for, the activity's deadline ends
		// the wait, and the collect fails.
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("the page after %s was not asked for while %s was read: %w", key, key, ctx.Err())
		}
	}
	return page, nil
}

// requests counts the ConfigMap requests made so far.
func (l *scriptedLister) requests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.countRequests()
}

func (l *scriptedLister) countRequests() int {
	n := 0
	for _, c := range l.calls {
		if c == "" || strings.HasPrefix(c, "t") {
			n++
		}
	}
	return n
}

func (l *scriptedLister) Get(context.Context, kube.Resource, string, string) (*kube.Item, error) {
	return nil, errors.New("not used")
}

type collectFixture struct {
	t      *testing.T
	lister *scriptedLister
	acts   *Activities
	in     v1alpha1.CollectInput
	spec   v1alpha1.BackupSpec
	beats  []CollectProgress
	// beat, when set, hears of every heartbeat; onBeat, when set, is
	// called with each.
	beat chan struct{}
}

func newCollectFixture(t *testing.T) *collectFixture {
	t.Helper()
	locURL := "file://" + t.TempDir()
	spec := v1alpha1.BackupSpec{Name: "b", StorageLocation: locURL}.WithDefaults("")
	typ := v1alpha1.ResourceType{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	lister := &scriptedLister{failOn: map[string]error{}, failTold: map[string]error{}}
	f := &collectFixture{
		t: t, lister: lister,
		acts: &Activities{Lister: lister, Log: zap.NewNop()},
		in: v1alpha1.CollectInput{Backup: "b", Location: locURL, Types: []v1alpha1.ResourceType{typ},
			Options: v1alpha1.BackupOptions{}.WithDefaults(), StartTime: &collectStart},
		spec: spec,
	}
	f.writePlan(true, "shop")
	return f
}

// writePlan stores the backup's plan: its namespaces, and whether the
// backup takes all of them.
func (f *collectFixture) writePlan(allNamespaces bool, namespaces ...string) {
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	require.NoError(f.t, loc.WriteJSON(context.Background(), location.Backup("b").Plan(),
		StoredPlan{Spec: f.spec, AllNamespaces: allNamespaces, Namespaces: namespaces, Types: f.in.Types}))
}

// attempt runs the activity once, resuming from resume when set, and
// returns the outcome of its first type.
func (f *collectFixture) attempt(resume *CollectProgress) (*v1alpha1.TypeCollected, error) {
	res, err := f.attemptBatch(resume)
	if err != nil {
		return nil, err
	}
	require.Len(f.t, res.Types, len(f.in.Types))
	return &res.Types[0], nil
}

// attemptBatch runs the activity once, resuming from resume when set.
func (f *collectFixture) attemptBatch(resume *CollectProgress) (*v1alpha1.CollectResult, error) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts.CollectResources)
	if resume != nil {
		env.SetHeartbeatDetails(*resume)
	}
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var p CollectProgress
		if details.Get(&p) == nil {
			f.beats = append(f.beats, p)
			if f.beat != nil {
				select {
				case f.beat <- struct{}{}:
				default:
				}
			}
		}
	})
	val, err := env.ExecuteActivity(f.acts.CollectResources, f.in)
	if err != nil {
		return nil, err
	}
	var res v1alpha1.CollectResult
	require.NoError(f.t, val.Get(&res))
	return &res, nil
}

// stored counts how often each object appears in the stored parts.
func (f *collectFixture) stored() map[string]int {
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Backup("b").PartsPrefix("configmaps"))
	require.NoError(f.t, err)
	counts := map[string]int{}
	for _, k := range keys {
		require.NoError(f.t, loc.ReadLines(context.Background(), k, func(line []byte) error {
			var obj struct {
				Metadata struct{ Name, Namespace string } `json:"metadata"`
			}
			require.NoError(f.t, json.Unmarshal(line, &obj))
			counts[obj.Metadata.Namespace+"/"+obj.Metadata.Name]++
			return nil
		}))
	}
	return counts
}

// storedParts counts the ConfigMap parts stored.
func (f *collectFixture) storedParts() int {
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Backup("b").PartsPrefix("configmaps"))
	require.NoError(f.t, err)
	return len(keys)
}

func (f *collectFixture) assertEveryObjectOnce() {
	f.t.Helper()
	counts := f.stored()
	assert.Len(f.t, counts, pages*perPage)
	for name, n := range counts {
		assert.Equal(f.t, 1, n, "%s stored %d times", name, n)
	}
}

func TestCollectResumesFromLastHeartbeat(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.failOn["t6"] = errors.New("worker lost its connection")
	_, err := f.attempt(nil)
	require.Error(t, err, "the first attempt fails at page 6")
	require.NotEmpty(t, f.beats)
	last := f.beats[len(f.beats)-1]
	assert.Equal(t, CollectProgress{Current: TypeProgress{Resource: "configmaps", Part: 6, Continue: "t6", Items: 30, Parts: 6}}, last,
		"the heartbeat names the page after the last one stored")

	f.lister.calls = nil
	res, err := f.attempt(&last)
	require.NoError(t, err)
	assert.Equal(t, "t6", f.lister.calls[0], "the retry resumes at the page after the last one stored, not at the start")
	assert.NotContains(t, f.lister.calls, "", "pages already stored are not listed again")
	assert.Equal(t, pages*perPage, res.Items)
	f.assertEveryObjectOnce()
	f.assertSegmentsHoldTheParts()
}

// TestCollectBatchResumesAfterTheTypesDone: a batch's retry lists
// neither the types its heartbeat counts done nor the pages of the
// current type already stored, and answers for every type in order.
func TestCollectBatchResumesAfterTheTypesDone(t *testing.T) {
	f := newCollectFixture(t)
	secrets := v1alpha1.ResourceType{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	services := v1alpha1.ResourceType{Version: "v1", Resource: "services", Kind: "Service", Namespaced: true}
	f.in.Types = []v1alpha1.ResourceType{secrets, f.in.Types[0], services}
	// The heartbeat of an attempt lost after the first two types, as a
	// worker that collected one type after the other recorded it.
	first, err := f.attemptBatch(nil)
	require.NoError(t, err)
	last := CollectProgress{Done: first.Types[:2]}

	f.lister.calls = nil
	res, err := f.attemptBatch(&last)
	require.NoError(t, err)
	assert.Equal(t, []string{"services"}, f.lister.calls, "the retry lists only the type not done")
	require.Len(t, res.Types, 3)
	assert.Equal(t, v1alpha1.TypeCollected{Resource: "secrets"}, res.Types[0])
	assert.Equal(t, v1alpha1.TypeCollected{Resource: "configmaps", Items: pages * perPage, Parts: pages}, res.Types[1])
	assert.Equal(t, v1alpha1.TypeCollected{Resource: "services"}, res.Types[2])
	f.assertEveryObjectOnce()
	f.assertNoTypeResults()
}

// TestCollectTakesTheEmptyListOfThePlanForTheType: a type the plan
// listed whole and found empty is not listed again; the others are.
func TestCollectTakesTheEmptyListOfThePlanForTheType(t *testing.T) {
	f := newCollectFixture(t)
	secrets := v1alpha1.ResourceType{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true, Empty: true}
	services := v1alpha1.ResourceType{Version: "v1", Resource: "services", Kind: "Service", Namespaced: true}
	f.in.Types = []v1alpha1.ResourceType{secrets, f.in.Types[0], services}
	f.writePlan(true, "shop")

	res, err := f.attemptBatch(nil)
	require.NoError(t, err)
	assert.NotContains(t, f.lister.calls, "secrets", "the plan's empty list stands for the type's")
	assert.Contains(t, f.lister.calls, "services")
	require.Len(t, res.Types, 3)
	assert.Equal(t, v1alpha1.TypeCollected{Resource: "secrets"}, res.Types[0])
	assert.Equal(t, pages*perPage, res.Types[1].Items)
	f.assertEveryObjectOnce()
}

// assertNoTypeResults: types with nothing to report store no result.
func (f *collectFixture) assertNoTypeResults() {
	f.t.Helper()
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	keys, err := loc.Keys(context.Background(), location.Backup("b").TypeResults())
	require.NoError(f.t, err)
	assert.Empty(f.t, keys, "no type had errors, warnings or exclusions")
}

func TestListsByNamespaceWhenCountingWouldCostMore(t *testing.T) {
	assert.False(t, ListsByNamespace(10_000, 100), "the 10,000-object bench: cluster-wide")
	assert.True(t, ListsByNamespace(100_000, 100), "the 100,000-object bench: by namespace")
	assert.True(t, ListsByNamespace(1_000_000, 10_000), "a million objects over many namespaces")
	assert.False(t, ListsByNamespace(60_000, 10_000), "a request per namespace would cost more")
	assert.False(t, ListsByNamespace(0, 0))
}

// TestCollectListsAHugeTypeNamespaceByNamespace: in a whole-cluster
// backup, a type whose estimate passes ListsByNamespace is listed in each
// of the plan's namespaces, a smaller one cluster-wide.
func TestCollectListsAHugeTypeNamespaceByNamespace(t *testing.T) {
	for _, tc := range []struct {
		estimate int
		shards   []string
	}{
		{2_000, []string{""}},
		{3_000, []string{"shop", "web"}},
	} {
		t.Run(fmt.Sprint(tc.estimate), func(t *testing.T) {
			f := newCollectFixture(t)
			f.writePlan(true, "shop", "web")
			f.in.Types[0].Estimate = tc.estimate
			res, err := f.attempt(nil)
			require.NoError(t, err)
			assert.Equal(t, tc.shards, f.lister.shards)
			assert.Equal(t, len(tc.shards)*pages*perPage, res.Items)
			counts := f.stored()
			assert.Len(t, counts, len(tc.shards)*pages*perPage)
			for name, n := range counts {
				assert.Equal(t, 1, n, "%s stored %d times", name, n)
			}
		})
	}
}

func TestCollectRestartsTypeOnExpiredContinueToken(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.failOn["t4"] = apierrors.NewResourceExpired("continue token too old")
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Restarts)
	assert.Equal(t, pages*perPage, res.Items)
	f.assertEveryObjectOnce()
	f.assertSegmentsHoldTheParts()
}

// TestCollectGoesOnWhenTheServerOffersToAfterAnExpiry: an expired
// continue token whose answer carries the server's next token is not a
// restart: the list goes on from the same object, every object stored
// once, and the type's result warns that the list is not a snapshot.
func TestCollectGoesOnWhenTheServerOffersToAfterAnExpiry(t *testing.T) {
	f := newCollectFixture(t)
	expired := apierrors.NewResourceExpired("continue token too old")
	expired.ErrStatus.Continue = "t4" // the API server's token for the same place
	f.lister.failOn["t4"] = expired
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Zero(t, res.Restarts, "the type is not listed again from the start")
	assert.Equal(t, pages*perPage, res.Items)
	assert.Equal(t, 1, countOf(f.lister.calls, ""), "the first page is listed once")
	f.assertEveryObjectOnce()

	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	var tr TypeResult
	require.NoError(t, loc.ReadJSON(context.Background(), location.Backup("b").TypeResult("configmaps"), &tr))
	require.Len(t, tr.Warnings, 1)
	assert.Contains(t, tr.Warnings[0], "outlived etcd's compaction 1 times")
}

func countOf(calls []string, token string) int {
	n := 0
	for _, c := range calls {
		if c == token {
			n++
		}
	}
	return n
}

// TestCollectRequestsTheNextPageWhileOneIsRead: the page after t5 is
// asked for while t5's answer is still read (the lister holds t5 back
// until it is), and never more than maxAhead pages ahead of those
// stored.
func TestCollectRequestsTheNextPageWhileOneIsRead(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.hold("t5", "t6")
	f.lister.onRequest = func(requested int) {
		// Besides the pages stored, the one being stored and those
		// asked for ahead of it.
		stored := f.storedParts()
		assert.LessOrEqual(t, requested, stored+1+maxAhead, "requests with %d pages stored", stored)
	}
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, pages*perPage, res.Items)
	assert.Equal(t, pages, f.lister.requests(), "no page is asked for twice")
	f.assertEveryObjectOnce()
}

// TestCollectDropsWhatAFailedPageAskedFor: a page that fails after it
// told where the next one starts is asked for again, what it caused to
// be asked for is dropped, and every object is stored once.
func TestCollectDropsWhatAFailedPageAskedFor(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.failTold["t3"] = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset")}
	f.lister.failTold["t7"] = errors.New("stream error")
	_, err := f.attempt(nil)
	require.Error(t, err, "t7 fails for good")
	last := f.beats[len(f.beats)-1]
	assert.Equal(t, 7, last.Current.Part, "the pages before t7 are stored")

	res, err := f.attempt(&last)
	require.NoError(t, err)
	assert.Equal(t, pages*perPage, res.Items)
	f.assertEveryObjectOnce()
	assert.Equal(t, 2, countOf(f.lister.calls, "t3"), "the page cut short is asked for again")
}

func TestCollectRetriesUnreachableReadAhead(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.failOn["t3"] = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, pages*perPage, res.Items)
	f.assertEveryObjectOnce()
	assert.Equal(t, 2, countOf(f.lister.calls, "t3"), "the failed read-ahead request is made again")
}

// TestCollectLeavesOutObjectsLabelledToBeExcluded: objects labelled
// cairn.io/ or velero.io/exclude-from-backup=true are not stored, and the
// type's result names them once each, across a retry that resumes from
// the last heartbeat.
func TestCollectLeavesOutObjectsLabelledToBeExcluded(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.labels = map[string]map[string]string{
		"cm-02-1": {"cairn.io/exclude-from-backup": "true"},
		"cm-07-3": {"velero.io/exclude-from-backup": "true"},
		"cm-08-0": {"cairn.io/exclude-from-backup": "false"},
	}
	f.lister.failOn["t6"] = errors.New("worker lost its connection")
	_, err := f.attempt(nil)
	require.Error(t, err)
	last := f.beats[len(f.beats)-1]
	res, err := f.attempt(&last)
	require.NoError(t, err)
	assert.Equal(t, pages*perPage-2, res.Items)
	stored := f.stored()
	assert.NotContains(t, stored, "shop/cm-02-1")
	assert.NotContains(t, stored, "shop/cm-07-3")
	assert.Contains(t, stored, "shop/cm-08-0", "only the value true excludes")

	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	var tr TypeResult
	require.NoError(t, loc.ReadJSON(context.Background(), location.Backup("b").TypeResult("configmaps"), &tr))
	assert.Equal(t, []ExcludedItem{
		{Namespace: "shop", Name: "cm-02-1", Label: "cairn.io/exclude-from-backup"},
		{Namespace: "shop", Name: "cm-07-3", Label: "velero.io/exclude-from-backup"},
	}, tr.Excluded)
	assert.Equal(t, 2, tr.ExcludedTotal)
}

// TestCollectSharesOfNamespacesSideBySide: a type collected by two
// activities, each a share of the plan's namespaces dealt in turn, lists
// each namespace once; a share that fails and resumes, then meets an
// expired continue token and starts over, drops only its own parts;
// every object is stored once, parts are named by the namespace's index
// in the plan, and shares with nothing to report store no result.
func TestCollectSharesOfNamespacesSideBySide(t *testing.T) {
	f := newCollectFixture(t)
	f.writePlan(false, "a", "b", "c", "d")

	f.in.Namespaces = &v1alpha1.NamespaceShare{Index: 0, Of: 2}
	first, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, f.lister.shards)
	assert.Equal(t, 2*pages*perPage, first.Items)

	f.lister.shards, f.beats = nil, nil
	f.in.Namespaces = &v1alpha1.NamespaceShare{Index: 1, Of: 2}
	f.lister.failOn["t6"] = errors.New("worker lost its connection")
	_, err = f.attempt(nil)
	require.Error(t, err, "the second share's first attempt fails in namespace b")
	last := f.beats[len(f.beats)-1]
	assert.Equal(t, 0, last.Current.Shard, "the share's own first namespace")
	f.lister.failOn["t3"] = apierrors.NewResourceExpired("continue token too old")
	second, err := f.attempt(&last)
	require.NoError(t, err)
	assert.Equal(t, 1, second.Restarts)
	assert.Equal(t, 2*pages*perPage, second.Items)
	assert.Equal(t, []string{"b", "d", "b", "d"}, f.lister.shards, "the share lists only its namespaces, again after the restart")

	counts := f.stored()
	assert.Len(t, counts, 4*pages*perPage, "the first share's parts survive the second's restart")
	for name, n := range counts {
		assert.Equal(t, 1, n, "%s stored %d times", name, n)
	}
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	keys := location.Backup("b")
	for shard, ns := range []string{"a", "b", "c", "d"} {
		parts, err := loc.Keys(context.Background(), keys.ShardParts("configmaps", shard))
		require.NoError(t, err)
		require.Len(t, parts, pages, "namespace %s's parts are named by its index in the plan", ns)
		require.NoError(t, loc.ReadLines(context.Background(), parts[0], func(line []byte) error {
			assert.Contains(t, string(line), `"namespace":"`+ns+`"`)
			return nil
		}))
	}
	f.assertNoTypeResults()
}

func TestShareOfShards(t *testing.T) {
	shards := []string{"a", "b", "c", "d", "e"}
	got, index := shareOf(shards, v1alpha1.NamespaceShare{Index: 1, Of: 2})
	assert.Equal(t, []string{"b", "d"}, got)
	assert.Equal(t, []int{1, 3}, index)
	got, _ = shareOf(shards, v1alpha1.NamespaceShare{Index: 0, Of: 3})
	assert.Equal(t, []string{"a", "d"}, got)
	got, _ = shareOf(shards, v1alpha1.NamespaceShare{Index: 7, Of: 8})
	assert.Empty(t, got, "a share past the plan's namespaces lists none")
	got, _ = shareOf([]string{""}, v1alpha1.NamespaceShare{Index: 0, Of: 2})
	assert.Equal(t, []string{""}, got, "a type listed whole belongs to share 0")
	got, _ = shareOf([]string{""}, v1alpha1.NamespaceShare{Index: 1, Of: 2})
	assert.Empty(t, got, "and to no other")
}
