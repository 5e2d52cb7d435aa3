package plant

import (
	"errors"
	"slices"

	"servesim/internal/profile"
)

// NormalizeOfferedLoad is the reference's normalize_offered_load: it dilates
// arrival times once so that the isolated maximum-clock service demand is
// targetUtilization of the trace span. It only dilates (factor
// max(1, rho/target)); a lighter trace is shifted to start at zero and
// otherwise unchanged. It returns new requests and the factor.
func NormalizeOfferedLoad(requests []Request, p *profile.Profile, targetUtilization float64) ([]Request, float64, error) {
	out := slices.Clone(requests)
	dilation, err := NormalizeOfferedLoadInPlace(out, p, targetUtilization)
	if err != nil {
		return nil, 0, err
	}
	return out, dilation, nil
}

// NormalizeOfferedLoadInPlace is NormalizeOfferedLoad rewriting the arrival
// times of requests instead of copying them; it returns the factor.
func NormalizeOfferedLoadInPlace(requests []Request, p *profile.Profile, targetUtilization float64) (float64, error) {
	return NormalizeFleetOfferedLoadInPlace(requests, p, targetUtilization, 1)
}

// NormalizeFleetOfferedLoadInPlace is NormalizeOfferedLoadInPlace for a
// fleet of replicas GPUs of profile p: the target utilization is of their
// total isolated maximum-clock capacity, so the factor is
// max(1, rho/(replicas*target)).
func NormalizeFleetOfferedLoadInPlace(requests []Request, p *profile.Profile, targetUtilization float64, replicas int) (float64, error) {
	if !(targetUtilization > 0 && targetUtilization < 1) {
		return 0, &FieldError{Field: "target_utilization", Value: targetUtilization, Why: "must lie strictly between zero and one"}
	}
	if len(requests) == 0 {
		return 0, errors.New("workload must contain at least one request")
	}
	z := newNormalizer(p)
	for _, r := range requests {
		z.observe(r)
	}
	dilation := z.factor(targetUtilization, replicas)
	for i := range requests {
		requests[i].ArrivalTimeS = z.dilate(requests[i].ArrivalTimeS, dilation)
	}
	return dilation, nil
}

// normalizer computes NormalizeFleetOfferedLoadInPlace's factor from the
// requests it observes one at a time, in order, so that a workload read
// twice (RunStream) is normalized as one held whole.
type normalizer struct {
	prefillRate, decodeRate float64 // at the profile's maximum clock
	n                       int
	first, last             float64 // arrival times
	isolated                float64 // service time of every request alone at the maximum clock
}

func newNormalizer(p *profile.Profile) *normalizer {
	maxClock := p.MaxClockMHz()
	return &normalizer{prefillRate: p.Rate(profile.PhasePrefill, maxClock), decodeRate: p.Rate(profile.PhaseDecode, maxClock)}
}

// observe accounts for the next request.
func (z *normalizer) observe(r Request) {
	if z.n == 0 {
		z.first = r.ArrivalTimeS
	}
	z.n++
	z.last = r.ArrivalTimeS
	z.isolated += float64(r.PromptTokens)/z.prefillRate + float64(r.OutputTokens)/z.decodeRate
}

// factor is the dilation factor for targetUtilization of replicas GPUs,
// once at least one request was observed.
func (z *normalizer) factor(targetUtilization float64, replicas int) float64 {
	span := pyMax(z.last-z.first, 1e-9)
	return pyMax(1.0, z.isolated/span/targetUtilization/float64(max(1, replicas)))
}

// dilate is arrivalS normalized by dilation.
func (z *normalizer) dilate(arrivalS, dilation float64) float64 {
	return (arrivalS - z.first) * dilation
}

// pyMax is Python's max(a, b): a unless b is greater.
func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// pyMin is Python's min(a, b): a unless b is smaller.
func pyMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}
