package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// identityRecorder answers the API server for cairn's resources.
type identityRecorder struct {
	namespace string // cairn's own
	log       *zap.Logger
}

func (r *identityRecorder) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.SubResource != "" || req.Kind.Group != v1alpha1.APIGroup {
		return admission.Allowed("")
	}
	switch req.Operation {
	case admissionv1.Create:
		return r.record(req)
	case admissionv1.Update:
		return r.update(req)
	}
	return admission.Allowed("")
}

// record records the requester in the resource, after checking that a
// resource outside cairn's namespace stays inside its own.
func (r *identityRecorder) record(req admission.Request) admission.Response {
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(req.Object.Raw, &obj.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode %s: %w", req.Kind.Kind, err))
	}
	if req.Namespace != r.namespace {
		if problems, err := scopeProblems(req.Kind.Kind, req.Object.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		} else if len(problems) > 0 {
			r.log.Info("Refused", zap.String("kind", req.Kind.Kind), zap.String("namespace", req.Namespace),
				zap.String("name", req.Name), zap.String("user", req.UserInfo.Username), zap.Strings("problems", problems))
			return admission.Denied(joinProblems(problems))
		}
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AnnotationActingAs] = v1alpha1.IdentityAnnotation(identityOf(req.UserInfo))
	obj.SetAnnotations(annotations)
	mutated, err := json.Marshal(obj.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// update refuses any change to the recorded identity: whoever may update
// a resource may not make it act as someone else. A Schedule whose spec
// changes acts as whoever changed it, as a schedule changed through the
// API does: someone who may edit a schedule may not borrow the rights of
// whoever wrote it first.
func (r *identityRecorder) update(req admission.Request) admission.Response {
	if req.Kind.Kind == "Schedule" {
		changed, err := specChanged(req.OldObject.Raw, req.Object.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if changed {
			return r.record(req)
		}
	}
	was, err := actingAsOf(req.OldObject.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	is, err := actingAsOf(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if was != is {
		r.log.Info("Refused a change of identity", zap.String("kind", req.Kind.Kind), zap.String("namespace", req.Namespace),
			zap.String("name", req.Name), zap.String("user", req.UserInfo.Username))
		return admission.Denied(fmt.Sprintf("metadata.annotations[%s]: cairn's admission webhook records the creator "+
			"at create; it cannot change", v1alpha1.AnnotationActingAs))
	}
	return admission.Allowed("")
}

func specChanged(oldRaw, newRaw []byte) (bool, error) {
	var was, is struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(oldRaw, &was); err != nil {
		return false, fmt.Errorf("decode old object: %w", err)
	}
	if err := json.Unmarshal(newRaw, &is); err != nil {
		return false, fmt.Errorf("decode object: %w", err)
	}
	return !equality.Semantic.DeepEqual(decoded(was.Spec), decoded(is.Spec)), nil
}

// decoded is a JSON value as maps and lists, so that key order and
// spacing do not count as changes.
func decoded(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v) // raw came out of a decoded object
	return v
}

func actingAsOf(raw []byte) (string, error) {
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("decode object: %w", err)
	}
	return obj.Metadata.Annotations[v1alpha1.AnnotationActingAs], nil
}

// identityOf is the API server's account of the requester.
func identityOf(u authenticationv1.UserInfo) v1alpha1.Identity {
	id := v1alpha1.Identity{Username: u.Username, UID: u.UID, Groups: slices.Clone(u.Groups)}
	for k, v := range u.Extra {
		if id.Extra == nil {
			id.Extra = make(map[string][]string, len(u.Extra))
		}
		id.Extra[k] = slices.Clone([]string(v))
	}
	return id
}
