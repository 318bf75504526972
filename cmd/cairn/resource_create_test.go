package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// The options a resource cannot carry are named, so the user knows what
// --direct is for; none set, none named.
func TestSetFieldsNamesTheOptionsGiven(t *testing.T) {
	assert.Empty(t, setFields(v1alpha1.BackupOptions{}))
	opts := v1alpha1.BackupOptions{PageSize: 10, ClusterUnreachableTimeout: &metav1.Duration{Duration: time.Minute}}
	assert.Equal(t, []string{"clusterUnreachableTimeout", "pageSize"}, setFields(opts))
}

// What the API server answers a create maps to the exit codes the
// direct path gives for the same mistake.
func TestKubeErrorsKeepTheirExitCodes(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.APIGroup, Resource: "backups"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: v1alpha1.APIGroup, Kind: "Backup"}, "x",
		field.ErrorList{field.Invalid(field.NewPath("spec", "clusterResources"), "most", "supported values: auto, include, exclude")})
	for err, code := range map[error]int{
		invalid:                                    starter.ExitInvalid,
		apierrors.NewForbidden(gr, "x", nil):       starter.ExitDenied,
		apierrors.NewUnauthorized("no token"):      starter.ExitDenied,
		apierrors.NewNotFound(gr, "x"):             starter.ExitNotFound,
		apierrors.NewAlreadyExists(gr, "x"):        starter.ExitError,
		apierrors.NewInternalError(assert.AnError): starter.ExitError,
	} {
		assert.Equal(t, code, starter.ExitCode(kubeError(err)), err.Error())
	}
	assert.Contains(t, kubeError(invalid).Error(), "spec.clusterResources")
}
