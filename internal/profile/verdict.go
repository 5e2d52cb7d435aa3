package profile

import (
	"bytes"
	"fmt"
	"strings"

	"servesim/internal/limits"
)

// Verdict is one profile's entry in validate-profile's result: what
// Validate found, and whether the profile is valid.
type Verdict struct {
	Path                   string    `json:"path"`
	Valid                  bool      `json:"valid"`
	ProfileStatus          string    `json:"profile_status"`
	MeasurementValidated   bool      `json:"measurement_validated"`
	SourceLabel            string    `json:"source_label"`
	ProfileCSVSHA256       string    `json:"profile_csv_sha256"`
	ManifestSHA256         string    `json:"manifest_sha256"`
	ClockLevelsMHz         []float64 `json:"clock_levels_mhz"`
	RealizedClockLevelsMHz []float64 `json:"realized_clock_levels_mhz"`
	Checks                 []Check   `json:"checks"`
	Error                  *string   `json:"error"`
}

// Verdicts is validate-profile's document: one Verdict per profile.
type Verdicts struct {
	Bundles []Verdict `json:"bundles"`
}

// RequireMeasuredCheck names the check NewVerdict adds when a validated
// measured_l4 bundle is required (validate-profile --require-measured).
const RequireMeasuredCheck = "require_measured"

// NewVerdict validates the profile at path; with requireMeasured, a profile
// that is not a validated measured_l4 bundle fails the added
// RequireMeasuredCheck.
func NewVerdict(path string, requireMeasured bool) Verdict {
	r := Validate(path)
	v := Verdict{
		Path:             path,
		ProfileStatus:    r.Status,
		SourceLabel:      r.SourceLabel,
		ProfileCSVSHA256: r.ProfileCSVSHA256,
		ManifestSHA256:   r.ManifestSHA256,
		Checks:           r.Checks,
	}
	err := r.Err
	if p := r.Profile; p != nil {
		v.MeasurementValidated = p.IsMeasured()
		v.ClockLevelsMHz = p.ClockMHz
		v.RealizedClockLevelsMHz = p.RealizedClockLevelsMHz()
		if requireMeasured {
			if p.IsMeasured() {
				v.Checks = append(v.Checks, Check{Name: RequireMeasuredCheck, Status: CheckOK, Detail: "validated measured_l4 bundle"})
			} else {
				detail := fmt.Sprintf("profile_status %q is not a validated measured_l4 bundle (--require-measured)", p.Status)
				v.Checks = append(v.Checks, Check{Name: RequireMeasuredCheck, Status: CheckFailed, Detail: detail})
				err = fmt.Errorf("profile %s: %s", path, detail)
			}
		}
	}
	v.Valid = err == nil
	if err != nil {
		msg := err.Error()
		v.Error = &msg
	}
	return v
}

// Text is validate-profile's text format: like sha256sum -c, one line per
// check ("PATH: CHECK: OK", "... FAILED: why", "... NOT RUN: why") and a
// verdict line per profile.
func (vs Verdicts) Text() []byte {
	var b bytes.Buffer
	for _, v := range vs.Bundles {
		for _, c := range v.Checks {
			switch c.Status {
			case CheckOK:
				fmt.Fprintf(&b, "%s: %s: OK\n", v.Path, c.Name)
			case CheckFailed:
				fmt.Fprintf(&b, "%s: %s: FAILED: %s\n", v.Path, c.Name, limits.OneLine(c.Detail))
			default:
				fmt.Fprintf(&b, "%s: %s: NOT RUN: %s\n", v.Path, c.Name, limits.OneLine(c.Detail))
			}
		}
		if v.Valid {
			kind := "not a measured profile"
			if v.MeasurementValidated {
				kind = "measurement validated"
			}
			fmt.Fprintf(&b, "%s: VALID (%s, %s)\n", v.Path, v.ProfileStatus, kind)
		} else {
			fmt.Fprintf(&b, "%s: INVALID: %s\n", v.Path, strings.TrimSpace(limits.OneLine(*v.Error)))
		}
	}
	return b.Bytes()
}
