// Package conformance runs the upstream Gateway API conformance suite against contour-rs.
//
// The suite reads its settings from flags (gateway-conformance/run passes them); this file only
// gives the suite an entry point inside this module, so the suite, echo-basic and kwok are all
// built at the versions go.mod pins.
package conformance

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

func TestConformance(t *testing.T) {
	conformance.RunConformance(t)
}
