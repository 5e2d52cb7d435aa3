package plant

import (
	"servesim/internal/profile"
)

// Result is one plant replay, shaped like the reference's
// ServingResult.as_dict(stride): the JSON encoding of a Result has the same
// keys in the same order, then the slo block. With Options.Summary the
// trajectory, the request records and the plan columns are empty and left
// out of the JSON.
type Result struct {
	ControllerName string `json:"controller_name"` // controller_name: the clock controller's Name
	SchedulerName  string `json:"scheduler_name"`  // scheduler_name: the scheduler's Name
	Trajectory
	Metrics          Metrics        `json:"metrics"`            // metrics: the run's ServingMetrics, over every step whatever the stride
	ProfileStatus    string         `json:"profile_status"`     // profile_status of the plant's profile
	WorkloadChecksum string         `json:"workload_checksum"`  // workload_checksum: SHA-256 hex of the reference's canonical request lines
	Requests         RequestRecords `json:"requests,omitempty"` // requests: one record per request, in workload order
	// PlannedClockMHz and PlannedClockStartTimeS are the plan made at each
	// sampled step and its start time: for a Planner, the plan of each step
	// that made one (every such step is sampled, whatever the stride) and
	// an empty plan and a null start time elsewhere; for the other
	// controllers, as the reference emits them, an empty plan and a null
	// start time per sampled step.
	PlannedClockMHz        [][]float64 `json:"planned_clock_mhz,omitempty"`
	PlannedClockStartTimeS []*float64  `json:"planned_clock_start_time_s,omitempty"` // null for a step without a plan
	// PlanDtS is a Planner's plan_dt_s, the spacing of plan entries, s;
	// nil (left out) for the other controllers and with Options.Summary.
	PlanDtS *float64 `json:"plan_dt_s,omitempty"`
	// MPCDiagnostics is a Planner's mpc_diagnostics; nil (left out) for
	// the other controllers. It is kept with Options.Summary.
	MPCDiagnostics *MPCDiagnostics `json:"mpc_diagnostics,omitempty"`
	// SLO is the slo block, after the keys of as_dict: the objectives of
	// Options.SLO, attainment, goodput and latency percentiles. It is
	// kept with Options.Summary too.
	SLO SLOReport `json:"slo"`
	// Engine is the engine block, after slo: the engine features' options
	// and what they did; nil (left out) when they are all off.
	Engine *EngineReport `json:"engine,omitempty"`
	// Service is the service block, after engine: the batched model, its
	// cards and what its iterations did; nil (left out) under the
	// reference's model.
	Service *ServiceReport `json:"service,omitempty"`
	// Steps is the number of simulated steps (the length of the full
	// trajectory).
	Steps int `json:"-"`
	// Log is what a per-request log needs, kept with Options.RequestLog
	// (with Options.Summary too); nil otherwise. Not part of the document.
	Log *RequestLog `json:"-"`
}

// Trajectory holds the sampled per-step values: steps 0, Stride, 2*Stride,
// ... and always the last step (the reference's as_dict stride rule). Each
// value describes the state at the end of its step.
type Trajectory struct {
	Stride                  int             `json:"-"`                             // sampling stride, steps (1 keeps every step)
	StepIndex               []int           `json:"-"`                             // which steps were sampled
	TimeS                   []float64       `json:"time_s,omitempty"`              // step end
	PrefillQueue            []int           `json:"prefill_queue,omitempty"`       // requests waiting for (or in) prefill
	DecodeActive            []int           `json:"decode_active,omitempty"`       // requests decoding
	CompletedRequests       []int           `json:"completed_requests,omitempty"`  // requests completed so far
	KVTokens                []float64       `json:"kv_tokens,omitempty"`           // KV-cache occupancy, tokens
	TemperatureC            []float64       `json:"temperature_c,omitempty"`       // temperature, degrees C
	PowerW                  []float64       `json:"power_w,omitempty"`             // power drawn during the step, W
	RequestedClockMHz       []float64       `json:"requested_clock_mhz,omitempty"` // clock the controller requested, MHz
	RealizedClockMHz        []float64       `json:"realized_clock_mhz,omitempty"`  // clock the profile realizes for that request, MHz
	EnergyJ                 []float64       `json:"energy_j,omitempty"`            // cumulative
	Phase                   []profile.Phase `json:"phase,omitempty"`               // phase the step served
	CumulativePrefillTokens []float64       `json:"-"`                             // prompt tokens prefilled so far
	CumulativeDecodeTokens  []float64       `json:"-"`                             // output tokens generated so far
}

// Len is the number of sampled steps.
func (t *Trajectory) Len() int { return len(t.TimeS) }

// stepSample is the state recorded at the end of one step.
type stepSample struct {
	index             int
	timeS             float64
	prefillQueue      int
	decodeActive      int
	completed         int
	kvTokens          float64
	temperatureC      float64
	powerW            float64
	requestedClockMHz float64
	realizedClockMHz  float64
	energyJ           float64
	phase             stepPhase
	cumulativePrefill float64
	cumulativeDecode  float64
}

// reserve preallocates room for n samples.
func (t *Trajectory) reserve(n int) {
	t.StepIndex = make([]int, 0, n)
	t.TimeS = make([]float64, 0, n)
	t.PrefillQueue = make([]int, 0, n)
	t.DecodeActive = make([]int, 0, n)
	t.CompletedRequests = make([]int, 0, n)
	t.KVTokens = make([]float64, 0, n)
	t.TemperatureC = make([]float64, 0, n)
	t.PowerW = make([]float64, 0, n)
	t.RequestedClockMHz = make([]float64, 0, n)
	t.RealizedClockMHz = make([]float64, 0, n)
	t.EnergyJ = make([]float64, 0, n)
	t.Phase = make([]profile.Phase, 0, n)
	t.CumulativePrefillTokens = make([]float64, 0, n)
	t.CumulativeDecodeTokens = make([]float64, 0, n)
}

// append adds one sample.
func (t *Trajectory) append(s *stepSample) {
	t.StepIndex = append(t.StepIndex, s.index)
	t.TimeS = append(t.TimeS, s.timeS)
	t.PrefillQueue = append(t.PrefillQueue, s.prefillQueue)
	t.DecodeActive = append(t.DecodeActive, s.decodeActive)
	t.CompletedRequests = append(t.CompletedRequests, s.completed)
	t.KVTokens = append(t.KVTokens, s.kvTokens)
	t.TemperatureC = append(t.TemperatureC, s.temperatureC)
	t.PowerW = append(t.PowerW, s.powerW)
	t.RequestedClockMHz = append(t.RequestedClockMHz, s.requestedClockMHz)
	t.RealizedClockMHz = append(t.RealizedClockMHz, s.realizedClockMHz)
	t.EnergyJ = append(t.EnergyJ, s.energyJ)
	t.Phase = append(t.Phase, s.phase.name())
	t.CumulativePrefillTokens = append(t.CumulativePrefillTokens, s.cumulativePrefill)
	t.CumulativeDecodeTokens = append(t.CumulativeDecodeTokens, s.cumulativeDecode)
}

// sample returns sampled step i.
func (t *Trajectory) sample(i int) stepSample {
	return stepSample{
		index:             t.StepIndex[i],
		timeS:             t.TimeS[i],
		prefillQueue:      t.PrefillQueue[i],
		decodeActive:      t.DecodeActive[i],
		completed:         t.CompletedRequests[i],
		kvTokens:          t.KVTokens[i],
		temperatureC:      t.TemperatureC[i],
		powerW:            t.PowerW[i],
		requestedClockMHz: t.RequestedClockMHz[i],
		realizedClockMHz:  t.RealizedClockMHz[i],
		energyJ:           t.EnergyJ[i],
		phase:             phaseCode(t.Phase[i]),
		cumulativePrefill: t.CumulativePrefillTokens[i],
		cumulativeDecode:  t.CumulativeDecodeTokens[i],
	}
}

// RequestRecord is the timing of one request after the run (the reference's
// RequestRecord). A time the request never reached is NaN (null in JSON, None
// in the reference). Times are step ends, except PrefillStartS, the start of
// the step in which its prefill began.
type RequestRecord struct {
	RequestID       int     `json:"request_id"`         // request_id: the request's index in the workload
	ArrivalTimeS    float64 `json:"arrival_time_s"`     // arrival_time_s: arrival, s
	PrefillStartS   float64 `json:"prefill_start_s"`    // prefill_start_s: start of the step that began its prefill, s
	FirstTokenTimeS float64 `json:"first_token_time_s"` // first_token_time_s: end of the step that produced its first output token, s
	CompletionTimeS float64 `json:"completion_time_s"`  // completion_time_s: end of the step that produced its last output token, s
	PromptTokens    int     `json:"prompt_tokens"`      // prompt_tokens: prompt length, tokens
	OutputTokens    int     `json:"output_tokens"`      // output_tokens: output length, tokens
	// Preemptions and RecomputedTokens are what preemption did to the
	// request (EngineRecord's), set under --preemption recompute and left
	// out otherwise; they point into the run's EngineReport.
	Preemptions      *int     `json:"preemptions,omitempty"`
	RecomputedTokens *float64 `json:"recomputed_tokens,omitempty"`
}

// RequestRecords are the records of a run, in workload order.
type RequestRecords []RequestRecord

// Summary is the reference's result_summary: provenance and every metric in
// one flat record.
type Summary struct {
	Controller       string `json:"controller"`        // controller: the result's controller_name
	Scheduler        string `json:"scheduler"`         // scheduler: the result's scheduler_name
	ProfileStatus    string `json:"profile_status"`    // profile_status: the result's profile_status
	WorkloadChecksum string `json:"workload_checksum"` // workload_checksum: the result's workload_checksum
	Metrics
}

// Summary returns result_summary(r).
func (r *Result) Summary() Summary {
	return Summary{
		Controller:       r.ControllerName,
		Scheduler:        r.SchedulerName,
		ProfileStatus:    r.ProfileStatus,
		WorkloadChecksum: r.WorkloadChecksum,
		Metrics:          r.Metrics,
	}
}
