package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
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
	was, err := partsOf(req.OldObject.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("old object: %w", err))
	}
	is, err := partsOf(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Kind.Kind == "Schedule" && !reflect.DeepEqual(was.Spec, is.Spec) {
		return r.record(req)
	}
	if was.actingAs() != is.actingAs() {
		r.log.Info("Refused a change of identity", zap.String("kind", req.Kind.Kind), zap.String("namespace", req.Namespace),
			zap.String("name", req.Name), zap.String("user", req.UserInfo.Username))
		return admission.Denied(fmt.Sprintf("metadata.annotations[%s]: cairn's admission webhook records the creator "+
			"at create; it cannot change", v1alpha1.AnnotationActingAs))
	}
	return admission.Allowed("")
}

// objectParts are what an update is judged on: the recorded identity,
// and the spec as maps and lists (key order and spacing are no change).
type objectParts struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec any `json:"spec"`
}

func partsOf(raw []byte) (objectParts, error) {
	var p objectParts
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("decode object: %w", err)
	}
	return p, nil
}

func (p objectParts) actingAs() string { return p.Metadata.Annotations[v1alpha1.AnnotationActingAs] }

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
