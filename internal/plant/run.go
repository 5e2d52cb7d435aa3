package plant

import (
	"context"
	"io"
	"slices"

	"servesim/internal/profile"
)

// Config is one complete simulate configuration: what `servesim simulate`
// runs, and what a sweep runs many of. Every run needs its own Controller
// (controllers may keep state); Plant, Scheduler built-ins and workloads
// may be shared between concurrent runs.
type Config struct {
	Plant      Plant           // plant limits and profile
	Scheduler  Scheduler       // phase scheduler
	Controller ClockController // clock controller, fresh for this run
	// Normalize, when positive, is the target utilization passed to
	// NormalizeOfferedLoad before simulating; zero simulates the trace as is.
	Normalize float64
	// NormalizeInPlace lets normalization rewrite the workload's arrival
	// times instead of copying the requests: for a workload that no other
	// run reads.
	NormalizeInPlace bool
	Options
	// ProfilePath and Version are recorded in the provenance only.
	ProfilePath string
	Version     string // servesim version, recorded as servesim_version
}

// Report is the document `servesim simulate` writes: the reference's
// as_dict(stride) keys, then result_summary, the normalization dilation
// (nil without normalization), every plant parameter and the provenance.
type Report struct {
	Result
	Summary    Summary    `json:"summary"`    // summary: result_summary of the run
	Dilation   *float64   `json:"dilation"`   // dilation: arrival-time dilation factor of NormalizeOfferedLoad; nil without normalization
	Plant      Plant      `json:"plant"`      // plant: every plant parameter of the run
	Provenance Provenance `json:"provenance"` // provenance: identity of the inputs
	// LastArrivalS is the arrival of the workload's last request, after
	// normalization, s. Not part of the document.
	LastArrivalS float64 `json:"-"`
}

// Provenance identifies the inputs of a run.
type Provenance struct {
	ProfilePath          string `json:"profile_path"`          // profile CSV path as given; empty for the embedded profile
	ProfileCSVSHA256     string `json:"profile_csv_sha256"`    // SHA-256 hex of the profile CSV bytes
	ManifestSHA256       string `json:"manifest_sha256"`       // SHA-256 hex of the manifest bytes; empty without one
	ProfileStatus        string `json:"profile_status"`        // the profile's profile_status
	SourceLabel          string `json:"source_label"`          // the profile's source_label
	MeasurementValidated bool   `json:"measurement_validated"` // the complete measured bundle passed validation
	TracePath            string `json:"trace_path"`            // where the trace was read from, "stdin" or "(embedded)"
	TraceSHA256          string `json:"trace_sha256"`          // SHA-256 hex of the trace bytes read
	RequestsLoaded       int    `json:"requests_loaded"`       // requests in the trace as loaded
	ServesimVersion      string `json:"servesim_version"`      // version of servesim that ran
	// FixedClockLevelMHz is the profile level a fixed:MHZ controller's
	// request is quantized down to (FixedClock.Level), which differs from
	// the request when the profile has no such level; nil (null) for the
	// other controllers.
	FixedClockLevelMHz *float64 `json:"fixed_clock_level_mhz"`
	// RequestsSkipped counts the trace rows a format's rule left out, by
	// reason (Workload.Skipped); absent when none was.
	RequestsSkipped map[string]int `json:"requests_skipped,omitempty"`
}

// NewProvenance identifies a run's inputs: profile prof read from
// profilePath, workload w, the servesim version and, for a fixed-clock
// controller, the level it runs (nil otherwise).
func NewProvenance(prof *profile.Profile, profilePath string, w Workload, version string, fixedLevel *float64) Provenance {
	return Provenance{
		ProfilePath:          profilePath,
		ProfileCSVSHA256:     prof.ProfileCSVSHA256,
		ManifestSHA256:       prof.ManifestSHA256,
		ProfileStatus:        prof.Status,
		SourceLabel:          prof.SourceLabel,
		MeasurementValidated: prof.MeasurementValid,
		TracePath:            w.Source,
		TraceSHA256:          w.SHA256,
		RequestsLoaded:       len(w.Requests),
		ServesimVersion:      version,
		FixedClockLevelMHz:   fixedLevel,
		RequestsSkipped:      w.Skipped,
	}
}

// Run normalizes w if asked, simulates it under cfg and returns the report.
// It closes a controller that is an io.Closer (an ExecController) when it
// returns or panics, and returns the controller's Close error, which says
// why it stopped the run, in place of the run's.
func Run(w Workload, cfg Config) (*Report, error) {
	return RunContext(context.Background(), w, cfg)
}

// RunContext is Run that stops, returning ctx's error, soon after ctx is
// done (SimulateContext).
func RunContext(ctx context.Context, w Workload, cfg Config) (rep *Report, err error) {
	defer closeController(cfg.Controller, &rep, &err)
	requests := w.Requests
	var dilation *float64
	if cfg.Normalize != 0 {
		if !cfg.NormalizeInPlace {
			requests = slices.Clone(requests)
		}
		factor, err := NormalizeOfferedLoadInPlace(requests, cfg.Plant.Profile, cfg.Normalize)
		if err != nil {
			return nil, err
		}
		dilation = &factor
	}
	checksum := WorkloadChecksum
	if !(dilation != nil && cfg.NormalizeInPlace) {
		checksum = func(asRun []Request) string { return w.Checksum(dilation, asRun) }
	}
	res, err := simulateContext(ctx, requests, cfg.Plant, cfg.Scheduler, cfg.Controller, cfg.Options, checksum)
	if err != nil {
		return nil, err
	}
	rep = newReport(res, dilation, w, len(w.Requests), cfg)
	rep.LastArrivalS = requests[len(requests)-1].ArrivalTimeS
	return rep, nil
}

// closeController closes c when it is an io.Closer, and replaces the run's
// report and error by its Close error when there is one: deferred by Run
// and RunStream.
func closeController(c ClockController, rep **Report, err *error) {
	if closer, ok := c.(io.Closer); ok {
		if cerr := closer.Close(); cerr != nil {
			*rep, *err = nil, cerr
		}
	}
}

// newReport is the report of run res of cfg on workload w, of which loaded
// requests were loaded, dilated by dilation (nil without normalization).
func newReport(res *Result, dilation *float64, w Workload, loaded int, cfg Config) *Report {
	prof := cfg.Plant.Profile
	var fixedLevel *float64
	if f, ok := cfg.Controller.(FixedClock); ok {
		level := f.Level(prof)
		fixedLevel = &level
	}
	provenance := NewProvenance(prof, cfg.ProfilePath, w, cfg.Version, fixedLevel)
	provenance.RequestsLoaded = loaded // a streamed workload has no Requests
	return &Report{
		Result:     *res,
		Summary:    res.Summary(),
		Dilation:   dilation,
		Plant:      cfg.Plant,
		Provenance: provenance,
	}
}
