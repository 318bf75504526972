package hooks

import (
	"context"
	"fmt"
	"sort"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/hooks/hookspec"
	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// hookResultsKey is the per-type results file the hook plan writes its
// warnings to (read by finalize with the collect results).
const hookResultsKey = "backup-hooks"

// PlanBackupHooks finds the pods the backup holds that have hooks, with
// the claims of theirs whose volumes it snapshots. A pod that is not
// running is a warning: its hooks cannot run (as in Velero).
func (a *Activities) PlanBackupHooks(ctx context.Context, in v1alpha1.PlanHooksInput) (*v1alpha1.PlanHooksResult, error) {
	a, err := a.actingAs(in.ActingAs)
	if err != nil {
		return nil, err
	}
	run, plan, err := cluster.StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, err
	}
	defer run.End()
	res := &v1alpha1.PlanHooksResult{Pods: []v1alpha1.HookedPod{}}
	if !plan.Plans("pods") {
		return res, nil
	}
	snapshotted := map[string]bool{}
	for _, v := range in.Volumes {
		snapshotted[v.Key()] = true
	}
	err = plan.EachSelectedPod(ctx, a.Kube, a.asCaller, func(p *corev1.Pod) error {
		pre, post := hookspec.ForPod(p, plan.Spec.Hooks)
		if len(pre) == 0 && len(post) == 0 {
			return nil
		}
		if p.Status.Phase != corev1.PodRunning {
			res.Warnings = append(res.Warnings, fmt.Sprintf("pod %s/%s is %s, not Running: its backup hooks do not run",
				p.Namespace, p.Name, p.Status.Phase))
			return nil
		}
		if len(res.Pods) == v1alpha1.MaxHookedPods {
			err := fmt.Errorf("more than %d pods of the backup have hooks; select fewer pods, or back them up in several backups",
				v1alpha1.MaxHookedPods)
			return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
		}
		pre, preCut := a.boundHooks(p.Namespace+"/"+p.Name, pre)
		post, postCut := a.boundHooks(p.Namespace+"/"+p.Name, post)
		res.Warnings = append(append(res.Warnings, preCut...), postCut...)
		hp := v1alpha1.HookedPod{Namespace: p.Namespace, Name: p.Name, Pre: pre, Post: post}
		for _, vol := range p.Spec.Volumes {
			if c := vol.PersistentVolumeClaim; c != nil && snapshotted[p.Namespace+"/"+c.ClaimName] {
				hp.Claims = append(hp.Claims, p.Namespace+"/"+c.ClaimName)
			}
			// A volume copied from this pod: its hooks hold around the copy.
			copied := v1alpha1.Volume{Namespace: p.Namespace, PodVolume: &v1alpha1.PodVolume{Pod: p.Name, Volume: vol.Name}}
			if key := copied.Key(); snapshotted[key] {
				hp.Claims = append(hp.Claims, key)
			}
		}
		res.Pods = append(res.Pods, hp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(res.Pods, func(i, j int) bool { return res.Pods[i].Key() < res.Pods[j].Key() })
	sort.Strings(res.Warnings)
	for _, w := range res.Warnings {
		run.Log.Warn("Backup hooks skipped", zap.String("reason", w))
	}
	tr := cluster.TypeResult{Resource: "pods", Warnings: res.Warnings}
	if err := cluster.StoreTypeResult(ctx, run, run.Keys.TypeResult(hookResultsKey), tr); err != nil {
		return nil, err
	}
	run.Log.Info("Planned backup hooks", zap.Int("pods", len(res.Pods)), zap.Int("skipped", len(res.Warnings)))
	return res, nil
}
