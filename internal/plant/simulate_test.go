package plant

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

// smallWorkload is the first ten minutes of the embedded trace.
func smallWorkload(t testing.TB) []Request {
	t.Helper()
	w, err := DefaultTrace(600)
	require.NoError(t, err)
	return w.Requests
}

func TestStepLoopAllocatesNothing(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	for _, ctrl := range []string{"max", "reactive", "sampled-reactive"} {
		for _, sched := range []string{"static", "continuous", "chunked"} {
			c, err := NewController(ctrl)
			require.NoError(t, err)
			s, err := NewScheduler(sched)
			require.NoError(t, err)
			sim, err := startSimulation(requests, p, s, c, Options{Stride: 1})
			require.NoError(t, err)
			allocs := testing.AllocsPerRun(2000, func() {
				done, err := sim.advance()
				require.NoError(t, err)
				require.False(t, done)
			})
			assert.Zerof(t, allocs, "%s/%s: allocations per step", sched, ctrl)
		}
	}
}

func TestSummaryKeepsTheSameMetricsAndNoTrajectory(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	full, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, Options{Stride: 1})
	require.NoError(t, err)
	summary, err := Simulate(requests, p, ChunkedPrefill{}, Reactive{}, Options{Summary: true})
	require.NoError(t, err)
	assert.Equal(t, full.Metrics, summary.Metrics)
	assert.Equal(t, full.Steps, summary.Steps)
	assert.Zero(t, summary.Len())
	assert.Nil(t, summary.Requests)
	assert.Nil(t, summary.PlannedClockMHz)

	recomputed, err := ComputeMetrics(full, p)
	require.NoError(t, err)
	assert.Equal(t, full.Metrics, recomputed, "online metrics equal compute_metrics on the stored trajectory")
	_, err = ComputeMetrics(summary, p)
	assert.ErrorContains(t, err, "full trajectory")
}

func TestStrideSamplesLikeAsDict(t *testing.T) {
	requests := smallWorkload(t)
	p := NewPlant(profile.Default())
	full, err := Simulate(requests, p, StaticBatch{}, MaxClock{}, Options{})
	require.NoError(t, err)
	require.Equal(t, full.Steps, full.Len())
	for _, stride := range []int{1, 7, 50, full.Steps - 1, full.Steps, full.Steps + 3} {
		res, err := Simulate(requests, p, StaticBatch{}, MaxClock{}, Options{Stride: stride})
		require.NoError(t, err)
		var want []int
		for i := 0; i < full.Steps; i += stride {
			want = append(want, i)
		}
		if want[len(want)-1] != full.Steps-1 {
			want = append(want, full.Steps-1)
		}
		require.Equal(t, want, res.StepIndex, "stride %d", stride)
		for j, i := range want {
			assert.Equal(t, full.TimeS[i], res.TimeS[j])
			assert.Equal(t, full.KVTokens[i], res.KVTokens[j])
			assert.Equal(t, full.Phase[i], res.Phase[j])
		}
		assert.Len(t, res.PlannedClockMHz, len(want))
		assert.Len(t, res.PlannedClockStartTimeS, len(want))
	}
}

func TestTimeAdvancesByRepeatedAddition(t *testing.T) {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = 3600
	// A request that never completes keeps the plant running to the cap.
	res, err := Simulate([]Request{{ID: 0, PromptTokens: 1, OutputTokens: 1 << 40}}, p, ContinuousBatch{}, MinClock{}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 36001, res.Steps, "a 3600 s cap gives 36001 steps")
	assert.Equal(t, 5.099999999999998, res.TimeS[50])
	assert.Equal(t, 1.0, res.Metrics.UnfinishedRequestsAtEnd)
	assert.True(t, math.IsNaN(res.Metrics.MeanTTFTS), "undefined without completions")
	assert.True(t, math.IsNaN(res.Requests[0].CompletionTimeS))
	assert.Equal(t, 0.0, res.Requests[0].PrefillStartS)
}

// queueAware is a user-defined scheduler and controller: it exercises the
// plug-in interfaces and records what it observed.
type queueAware struct {
	steps     int
	maxQueue  int
	lastAge   float64
	remaining float64
}

func (q *queueAware) Name() string { return "queue_aware" }

func (q *queueAware) Schedule(obs Observation) Action {
	q.steps++
	q.maxQueue = max(q.maxQueue, obs.PrefillQueue)
	q.lastAge = obs.OldestPrefillAgeS
	q.remaining = max(q.remaining, obs.PrefillRemainingTokens)
	if obs.PrefillQueue > 0 {
		return Action{Phase: profile.PhasePrefill, MaxPrefillTokens: 256}
	}
	return Action{Phase: profile.PhaseDecode}
}

func (q *queueAware) RequestClock(obs Observation) float64 {
	return obs.ClockLevelsMHz[min(obs.PrefillQueue, len(obs.ClockLevelsMHz)-1)]
}

func TestUserDefinedPolicies(t *testing.T) {
	requests := smallWorkload(t)
	q := &queueAware{}
	res, err := Simulate(requests, NewPlant(profile.Default()), q, q, Options{Summary: true})
	require.NoError(t, err)
	assert.Equal(t, "queue_aware", res.SchedulerName)
	assert.Equal(t, "queue_aware", res.ControllerName)
	assert.Equal(t, res.Steps, q.steps)
	assert.Positive(t, q.maxQueue)
	assert.Positive(t, q.remaining)
}

func TestObservationNeverCarriesOutputLengths(t *testing.T) {
	typ := reflect.TypeFor[Observation]()
	for i := range typ.NumField() {
		name := strings.ToLower(typ.Field(i).Name)
		assert.NotContains(t, name, "output", typ.Field(i).Name)
		kind := typ.Field(i).Type.Kind()
		assert.Contains(t, []reflect.Kind{reflect.Float64, reflect.Int, reflect.Slice}, kind)
	}
}

type badPolicy struct {
	action Action
	clock  float64
}

func (b badPolicy) Name() string                     { return "bad" }
func (b badPolicy) Schedule(Observation) Action      { return b.action }
func (b badPolicy) RequestClock(Observation) float64 { return b.clock }

func TestSimulateRejectsBadInput(t *testing.T) {
	p := NewPlant(profile.Default())
	ok := []Request{{ID: 0, PromptTokens: 1, OutputTokens: 1}, {ID: 1, ArrivalTimeS: 1, PromptTokens: 1, OutputTokens: 1}}
	tests := []struct {
		name     string
		requests []Request
		plant    func(*Plant)
		policy   badPolicy
		want     string
	}{
		{"empty", nil, nil, badPolicy{clock: 900}, "at least one request"},
		{"duplicate ids", []Request{ok[0], {ID: 0, ArrivalTimeS: 1, PromptTokens: 1, OutputTokens: 1}}, nil, badPolicy{clock: 900}, "unique"},
		{"sparse duplicate ids", []Request{{ID: 7, PromptTokens: 1, OutputTokens: 1}, {ID: 7, ArrivalTimeS: 1, PromptTokens: 1, OutputTokens: 1}}, nil, badPolicy{clock: 900}, "unique"},
		{"unsorted", []Request{ok[1], {ID: 0, PromptTokens: 1, OutputTokens: 1}}, nil, badPolicy{clock: 900}, "sorted by arrival_time_s"},
		{"bad request", []Request{{ID: 0, PromptTokens: 0, OutputTokens: 1}}, nil, badPolicy{clock: 900}, "token counts must be positive"},
		{"negative arrival", []Request{{ID: 0, ArrivalTimeS: -1, PromptTokens: 1, OutputTokens: 1}}, nil, badPolicy{clock: 900}, "finite and nonnegative"},
		{"negative id", []Request{{ID: -1, PromptTokens: 1, OutputTokens: 1}}, nil, badPolicy{clock: 900}, "nonnegative"},
		{"bad plant", ok, func(p *Plant) { p.TimeStepS = 0 }, badPolicy{clock: 900}, "time_step_s 0: must be finite and positive"},
		{"unknown phase", ok, nil, badPolicy{action: Action{Phase: "turbo"}, clock: 900}, `unknown scheduling phase: "turbo"`},
		{"negative cap", ok, nil, badPolicy{action: Action{Phase: profile.PhasePrefill, MaxPrefillTokens: -1}, clock: 900}, "maximum_prefill_tokens -1"},
		{"nan clock", ok, nil, badPolicy{action: Action{Phase: profile.PhaseIdle}, clock: math.NaN()}, "non-finite request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plant := p
			if tt.plant != nil {
				tt.plant(&plant)
			}
			_, err := Simulate(tt.requests, plant, tt.policy, tt.policy, Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestPlantValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Plant)
		want string
	}{
		{"defaults", func(*Plant) {}, ""},
		{"no profile", func(p *Plant) { p.Profile = nil }, "no profile"},
		{"time step", func(p *Plant) { p.TimeStepS = math.Inf(1) }, "time_step_s +Inf"},
		{"kv capacity", func(p *Plant) { p.KVCapacityTokens = -1 }, "kv_capacity_tokens"},
		{"kv reserve", func(p *Plant) { p.DecodeKVReserveTokensPerActive = 0 }, "decode_kv_reserve_tokens_per_active"},
		{"max active", func(p *Plant) { p.MaxActiveRequests = 0 }, "maximum_active_requests"},
		{"tau", func(p *Plant) { p.ThermalTimeConstantS = math.NaN() }, "thermal_time_constant_s"},
		{"resistance", func(p *Plant) { p.ThermalResistanceCPerW = 0 }, "thermal_resistance_c_per_w"},
		{"power", func(p *Plant) { p.PowerLimitW = 0 }, "power_limit_w"},
		{"thermal", func(p *Plant) { p.ThermalLimitC = 0 }, "thermal_limit_c"},
		{"horizon", func(p *Plant) { p.ReportingHorizonS = 0 }, "reporting_horizon_s"},
		{"sim time", func(p *Plant) { p.MaxSimulationTimeS = 0 }, "maximum_simulation_time_s"},
		{"ambient", func(p *Plant) { p.AmbientTemperatureC = math.NaN() }, "ambient_temperature_c"},
		{"limit below ambient", func(p *Plant) { p.AmbientTemperatureC = 80 }, "must exceed ambient_temperature_c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlant(profile.Default())
			tt.edit(&p)
			err := p.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestObservationMatchesTheReferenceSums checks the running totals of the
// observation against the reference's sums over the whole queue.
func TestObservationMatchesTheReferenceSums(t *testing.T) {
	requests := smallWorkload(t)
	sim, err := startSimulation(requests, NewPlant(profile.Default()), ChunkedPrefill{}, Reactive{}, Options{Summary: true})
	require.NoError(t, err)
	sim.fullObservation = true // as for a policy that reads GeneratedDecodeTokens
	checked, reused := 0, 0
	for {
		done, err := sim.advance()
		require.NoError(t, err)
		if done {
			break
		}
		// The state after a step is what the next step observes (before
		// its arrivals, which the sums below leave out on both sides).
		var obs Observation
		sim.observe(&obs)
		assert.Equal(t, sim.occupancy(), obs.KVTokens)
		remaining, kv, oldest := 0.0, 0.0, math.Inf(1)
		for i := sim.head; i < sim.pending; i++ {
			r := &sim.progress[i]
			remaining += r.prefillRemaining
			kv += r.promptProcessed + r.generated
			oldest = min(oldest, sim.records[i].ArrivalTimeS)
		}
		generated := 0.0
		for _, i := range sim.active {
			kv += sim.progress[i].promptProcessed + sim.progress[i].generated
			generated += sim.progress[i].generated
		}
		assert.InEpsilon(t, remaining+1, obs.PrefillRemainingTokens+1, 1e-12)
		assert.Equal(t, kv, obs.KVTokens)
		assert.Equal(t, generated, obs.GeneratedDecodeTokens)
		if sim.head < sim.pending {
			assert.Equal(t, max(0, sim.timeS-oldest), obs.OldestPrefillAgeS)
			checked++
		}
		// A decode-only step reuses the occupancy as the active requests'
		// KV when the queue head holds none: the two sums must agree bit
		// for bit.
		if head := sim.head; head == sim.pending || sim.progress[head].promptProcessed+sim.progress[head].generated == 0 {
			assert.Equal(t, math.Float64bits(sim.activeOccupancy(0)), math.Float64bits(sim.kvAtEnd))
			reused++
		}
	}
	assert.Positive(t, checked)
	assert.Positive(t, reused)
}

// measuredProfile is the embedded proxy relabelled as a validated
// measurement with realized-clock medians below the requested levels.
func measuredProfile(t *testing.T) *profile.Profile {
	t.Helper()
	p := *profile.Default()
	p.Status = profile.StatusMeasuredL4
	p.MeasurementValid = true
	p.RealizedClockMHz = []float64{400, 650, 930, 1200, 1450, 1700, 1950}
	measured, err := profile.New(p)
	require.NoError(t, err)
	return measured
}

func TestRealizeClock(t *testing.T) {
	tests := []struct {
		name         string
		prof         *profile.Profile
		requested    float64
		phase        stepPhase
		temperatureC float64
		powerLimitW  float64
		wantMHz      float64
		wantRealized float64
	}{
		{"quantized down", profile.Default(), 1000, phaseIdle, 25, 64.8, 960, 960},
		{"clamped below", profile.Default(), 1, phaseIdle, 25, 64.8, 420, 420},
		{"thermal downshift", profile.Default(), 1000, phaseIdle, 75, 64.8, 690, 690},
		{"governor lowers prefill", profile.Default(), 2040, phasePrefill, 25, 64.8, 1770, 1770},
		{"governor lowers decode further", profile.Default(), 2040, phaseDecode, 25, 64.8, 1500, 1500},
		{"governor stops at the bottom", profile.Default(), 2040, phasePrefill, 25, 1, 420, 420},
		{"measured: no governor", measuredProfile(t), 2040, phasePrefill, 25, 1, 2040, 1950},
		{"measured: thermal downshift", measuredProfile(t), 2040, phasePrefill, 80, 1, 1770, 1700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlant(tt.prof)
			p.PowerLimitW = tt.powerLimitW
			sim, err := startSimulation([]Request{{PromptTokens: 1, OutputTokens: 1}}, p, StaticBatch{}, MaxClock{}, Options{Summary: true})
			require.NoError(t, err)
			sim.temperatureC = tt.temperatureC
			level := sim.realizedLevel(sim.quantizedLevel(tt.requested), tt.phase)
			require.NoError(t, level.realizedErr)
			assert.Equal(t, tt.wantMHz, level.mhz)
			assert.Equal(t, tt.wantRealized, level.realizedMHz)
		})
	}
}

func TestMeasuredProfileReportsRealizedClocks(t *testing.T) {
	res, err := Simulate(smallWorkload(t), NewPlant(measuredProfile(t)), ChunkedPrefill{}, Reactive{}, Options{})
	require.NoError(t, err)
	realized := measuredProfile(t).RealizedClockMHz
	for i, mhz := range res.RealizedClockMHz {
		assert.Contains(t, realized, mhz, "step %d", res.StepIndex[i])
	}
	assert.Equal(t, profile.StatusMeasuredL4, res.ProfileStatus)
}
