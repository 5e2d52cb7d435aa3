package plant

import (
	"servesim/internal/profile"
)

// Result is one plant replay, shaped like the reference's
// ServingResult.as_dict(stride): the JSON encoding of a Result has the same
// keys in the same order. With Options.Summary the trajectory, the request
// records and the plan columns are empty and left out of the JSON.
type Result struct {
	ControllerName string `json:"controller_name"`
	SchedulerName  string `json:"scheduler_name"`
	Trajectory
	Metrics          Metrics        `json:"metrics"`
	ProfileStatus    string         `json:"profile_status"`
	WorkloadChecksum string         `json:"workload_checksum"`
	Requests         RequestRecords `json:"requests,omitempty"`
	// PlannedClockMHz and PlannedClockStartTimeS are what the reference
	// emits for its non-planning controllers: an empty plan and a null
	// start time per sampled step.
	PlannedClockMHz        [][]float64 `json:"planned_clock_mhz,omitempty"`
	PlannedClockStartTimeS []*float64  `json:"planned_clock_start_time_s,omitempty"`
	// Steps is the number of simulated steps (the length of the full
	// trajectory).
	Steps int `json:"-"`
}

// Trajectory holds the sampled per-step values: steps 0, Stride, 2*Stride,
// ... and always the last step (the reference's as_dict stride rule). Each
// value describes the state at the end of its step.
type Trajectory struct {
	Stride                  int             `json:"-"`
	StepIndex               []int           `json:"-"`                // which steps were sampled
	TimeS                   []float64       `json:"time_s,omitempty"` // step end
	PrefillQueue            []int           `json:"prefill_queue,omitempty"`
	DecodeActive            []int           `json:"decode_active,omitempty"`
	CompletedRequests       []int           `json:"completed_requests,omitempty"`
	KVTokens                []float64       `json:"kv_tokens,omitempty"`
	TemperatureC            []float64       `json:"temperature_c,omitempty"`
	PowerW                  []float64       `json:"power_w,omitempty"`
	RequestedClockMHz       []float64       `json:"requested_clock_mhz,omitempty"`
	RealizedClockMHz        []float64       `json:"realized_clock_mhz,omitempty"`
	EnergyJ                 []float64       `json:"energy_j,omitempty"` // cumulative
	Phase                   []profile.Phase `json:"phase,omitempty"`
	CumulativePrefillTokens []float64       `json:"-"`
	CumulativeDecodeTokens  []float64       `json:"-"`
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
	phase             profile.Phase
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
	t.Phase = append(t.Phase, s.phase)
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
		phase:             t.Phase[i],
		cumulativePrefill: t.CumulativePrefillTokens[i],
		cumulativeDecode:  t.CumulativeDecodeTokens[i],
	}
}

// RequestRecord is the timing of one request after the run (the reference's
// RequestRecord). A time the request never reached is NaN (null in JSON, None
// in the reference). Times are step ends, except PrefillStartS, the start of
// the step in which its prefill began.
type RequestRecord struct {
	RequestID       int     `json:"request_id"`
	ArrivalTimeS    float64 `json:"arrival_time_s"`
	PrefillStartS   float64 `json:"prefill_start_s"`
	FirstTokenTimeS float64 `json:"first_token_time_s"`
	CompletionTimeS float64 `json:"completion_time_s"`
	PromptTokens    int     `json:"prompt_tokens"`
	OutputTokens    int     `json:"output_tokens"`
}

// RequestRecords are the records of a run, in workload order.
type RequestRecords []RequestRecord

// Summary is the reference's result_summary: provenance and every metric in
// one flat record.
type Summary struct {
	Controller       string `json:"controller"`
	Scheduler        string `json:"scheduler"`
	ProfileStatus    string `json:"profile_status"`
	WorkloadChecksum string `json:"workload_checksum"`
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
