package webhook

import (
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Name is the name of the webhook inside its configuration.
const Name = "resources.cairn.io"

// resources are those the webhook must see, every one of them.
var resources = []string{"backups", "restores", "schedules"}

// Configuration is the MutatingWebhookConfiguration that puts the webhook
// in front of cairn's resources: every create and update, in every
// namespace, and nothing passes when the webhook does not answer. The
// chart renders the same.
func Configuration(name string, client admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    Name,
			ClientConfig:            client,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			TimeoutSeconds:          ptr.To[int32](10),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{v1alpha1.APIGroup}, APIVersions: []string{"*"},
					Resources: resources, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
		}},
	}
}

// Propagation is how long after its configuration is created the API
// server is trusted to call the webhook: its informer learns of a new
// configuration in well under a second; this is the margin.
const Propagation = 10 * time.Second

// InForce reports whether cfg put the webhook in front of a resource
// created at created: it existed long enough before, and lets no create
// or update of cairn's resources pass without the webhook's answer. A
// resource created otherwise may carry an identity its creator wrote.
func InForce(cfg *admissionregistrationv1.MutatingWebhookConfiguration, created time.Time, propagation time.Duration) error {
	if !cfg.CreationTimestamp.Add(propagation).Before(created) {
		return fmt.Errorf("it was created before %s put cairn's admission webhook in front of it (%s); "+
			"create it again", cfg.Name, cfg.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == Name })
	if i < 0 {
		return fmt.Errorf("MutatingWebhookConfiguration %s has no webhook %s", cfg.Name, Name)
	}
	w := cfg.Webhooks[i]
	switch {
	case w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail:
		return fmt.Errorf("webhook %s of %s lets requests pass when it fails (failurePolicy is not Fail)", Name, cfg.Name)
	case !matchesEverything(w.NamespaceSelector) || !matchesEverything(w.ObjectSelector) || len(w.MatchConditions) > 0:
		return fmt.Errorf("webhook %s of %s skips some resources (a selector or match condition)", Name, cfg.Name)
	case !coversResources(w.Rules):
		return fmt.Errorf("webhook %s of %s does not see every create and update of %v in %s", Name, cfg.Name, resources, v1alpha1.APIGroup)
	}
	return nil
}

func matchesEverything(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

func coversResources(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, res := range resources {
		for _, op := range []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update} {
			if !slices.ContainsFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool {
				return anyOf(r.APIGroups, v1alpha1.APIGroup) && anyOf(r.APIVersions, v1alpha1.GroupVersion.Version) &&
					anyOf(r.Resources, res) && (anyOf(opStrings(r.Operations), string(op)))
			}) {
				return false
			}
		}
	}
	return true
}

func anyOf(list []string, want string) bool {
	return slices.Contains(list, want) || slices.Contains(list, "*")
}

func opStrings(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = string(op)
	}
	return out
}
