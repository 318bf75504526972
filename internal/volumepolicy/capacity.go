package volumepolicy

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// capacityRange is Velero's "min,max" capacity condition. Both bounds are
// inclusive and a zero bound is open, so ",10Gi" equals "0,10Gi" and
// "10Gi," has no upper bound.
//
// Bounds and sizes are compared as float64 bytes, never with
// Quantity.Cmp: Cmp rescales both sides to one exponent, and a claim's
// capacity is cluster input that may carry any exponent ("1e99999999999"
// would take minutes and gigabytes). float64 is exact for every whole
// number of bytes up to 8 PiB, far beyond what a range condition tells
// apart.
type capacityRange struct {
	min, max float64 // bytes; 0 is an open bound
}

// Limits that keep hostile bounds cheap: ParseQuantity expands a decimal
// exponent digit by digit (parsing "1e-99999999" takes most of a minute).
const maxBoundLength = 64

var (
	longExponent = regexp.MustCompile(`[eE][+-]?[0-9]{3,}$`)
	// maxBytes (2^63 bytes, 8Ei) is more than any volume holds.
	maxBytes = math.Ldexp(1, 63)
)

func parseCapacityRange(s string) (capacityRange, error) {
	lower, upper, found := strings.Cut(s, ",")
	if !found || strings.Contains(upper, ",") {
		return capacityRange{}, fmt.Errorf("%q is not \"min,max\" (either side may be empty)", s)
	}
	minQ, err := parseBound(lower)
	if err != nil {
		return capacityRange{}, fmt.Errorf("min: %w", err)
	}
	maxQ, err := parseBound(upper)
	if err != nil {
		return capacityRange{}, fmt.Errorf("max: %w", err)
	}
	r := capacityRange{min: bytesOf(&minQ), max: bytesOf(&maxQ)}
	if r.max != 0 && r.min > r.max {
		return capacityRange{}, fmt.Errorf("min %s is above max %s", minQ.String(), maxQ.String())
	}
	return r, nil
}

func parseBound(s string) (resource.Quantity, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return resource.Quantity{}, nil
	case len(s) > maxBoundLength:
		return resource.Quantity{}, fmt.Errorf("%.20q... is longer than %d characters", s, maxBoundLength)
	case longExponent.MatchString(s):
		return resource.Quantity{}, fmt.Errorf("%q: exponent has more than two digits", s)
	}
	q, err := resource.ParseQuantity(s)
	switch {
	case err != nil:
		return resource.Quantity{}, fmt.Errorf("%q: %w", s, err)
	case q.IsZero():
		return resource.Quantity{}, nil
	case q.Sign() < 0:
		return resource.Quantity{}, fmt.Errorf("%q is negative", s)
	case q.AsApproximateFloat64() >= maxBytes:
		return resource.Quantity{}, fmt.Errorf("%q is 8Ei or more", s)
	}
	return q, nil
}

// bytesOf is a size in bytes, cheap whatever its exponent: beyond 8Ei it
// is +Inf, and an unknown, negative or unreadable size is zero, as Velero
// treats a volume whose capacity it cannot read.
func bytesOf(q *resource.Quantity) float64 {
	if q == nil {
		return 0
	}
	f := q.AsApproximateFloat64()
	switch {
	case math.IsNaN(f), f <= 0:
		return 0
	case f >= maxBytes:
		return math.Inf(1)
	}
	return f
}

func (r capacityRange) contains(size *resource.Quantity) bool {
	b := bytesOf(size)
	return (r.min == 0 || b >= r.min) && (r.max == 0 || b <= r.max)
}
