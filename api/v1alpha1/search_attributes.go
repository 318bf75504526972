package v1alpha1

import "go.temporal.io/sdk/temporal"

// Typed search attributes, registered on the namespace at start-up so the
// Temporal UI can filter, for example: CairnKind="backup" AND CairnPhase="Failed".
var (
	SearchAttrKind     = temporal.NewSearchAttributeKeyKeyword("CairnKind")
	SearchAttrName     = temporal.NewSearchAttributeKeyKeyword("CairnName")
	SearchAttrPhase    = temporal.NewSearchAttributeKeyKeyword("CairnPhase")
	SearchAttrSchedule = temporal.NewSearchAttributeKeyKeyword("CairnSchedule")
	// SearchAttrHealth is a scheduled run's verdict on its schedule:
	// Healthy or Degraded (CairnHealth="Degraded" finds the troubled ones).
	SearchAttrHealth = temporal.NewSearchAttributeKeyKeyword("CairnHealth")
	// SearchAttrActingAs is the user a backup or restore acts as, "worker"
	// for one started on Temporal's path (CairnActingAs="alice" finds
	// alice's runs).
	SearchAttrActingAs = temporal.NewSearchAttributeKeyKeyword("CairnActingAs")
)

// SearchAttributeNames lists the custom keyword attributes cairn uses.
func SearchAttributeNames() []string {
	return []string{SearchAttrKind.GetName(), SearchAttrName.GetName(), SearchAttrPhase.GetName(),
		SearchAttrSchedule.GetName(), SearchAttrHealth.GetName(), SearchAttrActingAs.GetName()}
}
