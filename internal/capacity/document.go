package capacity

import (
	"servesim/internal/fleet"
	"servesim/internal/plant"
)

// Document is what `servesim capacity` writes: the study's report,
// the objectives the requests were judged by and the inputs.
type Document struct {
	*Report
	SLO        DocumentSLO `json:"slo"`        // slo: the objectives the requests were judged by
	Provenance Provenance  `json:"provenance"` // provenance: the inputs
	// Service is the batched service model and its cards; nil (left out)
	// under the reference's model.
	Service *plant.ServiceModel `json:"service,omitempty"`
	// Disaggregated is capacity --disaggregated's answer, beside the mixed
	// fleet's above; nil (left out) without it.
	Disaggregated *DisaggReport `json:"disaggregated,omitempty"`
}

// DocumentSLO holds the objectives used, in seconds; nil (null) for an
// objective taken from each replica's profile when the groups' profiles
// differ or, for e2e, not given.
type DocumentSLO struct {
	TTFTSLOSeconds *float64 `json:"ttft_slo_s"`
	TPOTSLOSeconds *float64 `json:"tpot_slo_s"`
	E2ESLOSeconds  *float64 `json:"e2e_slo_s"`
}

// Provenance identifies the inputs of a study.
type Provenance struct {
	ProfilePath     string `json:"profile_path"`    // --profile, or the embedded profile's name
	FleetPath       string `json:"fleet_path"`      // fleet file; empty without one
	TracePath       string `json:"trace_path"`      // where the trace was read from
	TraceSHA256     string `json:"trace_sha256"`    // SHA-256 hex of the trace bytes read
	RequestsLoaded  int    `json:"requests_loaded"` // requests in the trace as loaded
	ServesimVersion string `json:"servesim_version"`
	// RequestsSkipped counts the trace rows its format's rules skipped, by
	// reason; absent when none was.
	RequestsSkipped map[string]int `json:"requests_skipped,omitempty"`
}

// SLOUsed reports the objectives a study of unit judged by: those given
// (non-zero), else the profile's when every group's profile has the same
// one, else nil (each replica's own).
func SLOUsed(given plant.SLO, unit []fleet.Group) DocumentSLO {
	objective := func(given float64, of func(plant.SLO) float64) *float64 {
		if given != 0 {
			return &given
		}
		first := of(plant.ProfileSLO(unit[0].Profile))
		for _, g := range unit[1:] {
			if of(plant.ProfileSLO(g.Profile)) != first {
				return nil
			}
		}
		return &first
	}
	used := DocumentSLO{
		TTFTSLOSeconds: objective(given.TTFTSeconds, func(s plant.SLO) float64 { return s.TTFTSeconds }),
		TPOTSLOSeconds: objective(given.TPOTSeconds, func(s plant.SLO) float64 { return s.TPOTSeconds }),
	}
	if given.E2ESeconds != 0 {
		e2e := given.E2ESeconds
		used.E2ESLOSeconds = &e2e
	}
	return used
}
