package plant

import (
	"fmt"
	"math"
	"strconv"

	"servesim/internal/limits"
)

// Work limits of one run. A run takes a step of TimeStepS until every
// request has completed or MaxSimulationTimeS has passed; which comes first
// is known only by running, so the work is bounded by the second: StepBound.
const (
	// DefaultMaxSteps bounds the steps of a run unless Options.MaxSteps
	// says otherwise: 1e9 steps take several minutes (a step costs
	// 0.3-0.4 µs with a few active requests).
	DefaultMaxSteps = 1e9
	// MaxTrajectorySamples bounds the trajectory a run keeps (Options
	// without Summary), summed over the plants held at once (a fleet's
	// replicas: CheckPlantsAtOnce): 1e7 samples take about 1.5 GB of
	// memory (152 bytes a sample, the empty plan columns included) and
	// 1.1 GB of JSON. Options.Stride or Options.Summary keep a longer run
	// within it.
	MaxTrajectorySamples = 1e7
)

// Names of the limits in a LimitError.
const (
	LimitSteps             = "max_steps"          // Options.MaxSteps, DefaultMaxSteps
	LimitTrajectorySamples = "trajectory_samples" // MaxTrajectorySamples
)

// LimitError reports a run whose work would exceed a limit. It is returned
// before anything is allocated for the run.
type LimitError struct {
	Limit string  // which limit: LimitSteps or LimitTrajectorySamples
	Value float64 // steps or samples the run may need; +Inf past the float range
	Max   float64 // the limit
	// MaxSimulationTimeS and TimeStepS are the plant fields the steps
	// follow from; Stride samples them (LimitTrajectorySamples).
	MaxSimulationTimeS, TimeStepS float64
	Stride                        int
	// Plants is how many plants the limit was checked for at once (the
	// replicas of a fleet): 0 or 1 for one plant.
	Plants int
}

// Steps is the StepBound of the run.
func (e *LimitError) Steps() float64 {
	return StepBound(Plant{MaxSimulationTimeS: e.MaxSimulationTimeS, TimeStepS: e.TimeStepS})
}

// Error names the plant fields the work follows from and the limit, e.g.
// "maximum_simulation_time_s 3600 / time_step_s 1e-09 = 3.6e+12 simulation
// steps: more than max_steps 1e+09".
func (e *LimitError) Error() string {
	if e.Limit == LimitLiveKVBlocks {
		return fmt.Sprintf("%d plants at once hold %s prefix-cache KV blocks: more than %s %d (about %s)",
			e.Plants, FormatCount(e.Value, e.Max), e.Limit, MaxLiveKVBlocks, limits.FormatBytes(MaxLiveKVBlocks*KVBlockBytes))
	}
	if e.Limit == LimitTrajectorySamples && e.Plants > 1 {
		return fmt.Sprintf("maximum_simulation_time_s %g / time_step_s %g = %s simulation steps at stride %d keep %s trajectory samples in %d plants: more than %s %g",
			e.MaxSimulationTimeS, e.TimeStepS, FormatCount(e.Steps(), 0), e.Stride, FormatCount(e.Value, e.Max), e.Plants, e.Limit, e.Max)
	}
	if e.Limit == LimitTrajectorySamples {
		return fmt.Sprintf("maximum_simulation_time_s %g / time_step_s %g = %s simulation steps at stride %d keep %s trajectory samples: more than %s %g",
			e.MaxSimulationTimeS, e.TimeStepS, FormatCount(e.Steps(), 0), e.Stride, FormatCount(e.Value, e.Max), e.Limit, e.Max)
	}
	steps := fmt.Sprintf("maximum_simulation_time_s %g / time_step_s %g = %s simulation steps",
		e.MaxSimulationTimeS, e.TimeStepS, FormatCount(e.Value, e.Max))
	return fmt.Sprintf("%s: more than %s %g", steps, e.Limit, e.Max)
}

// FormatCount writes a count of steps or samples over a limit: with three
// significant digits ("3.6e+12"), in full when it is below ten million or
// when three digits would not show it above the limit, and "over 1.8e+308"
// past the float range.
func FormatCount(x, limit float64) string {
	if math.IsInf(x, 1) {
		return "over 1.8e+308"
	}
	short := strconv.FormatFloat(x, 'g', 3, 64)
	if rounded, _ := strconv.ParseFloat(short, 64); x < 1e7 || (rounded <= limit && x < 1e18) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return short
}

// StepBound is the most steps a run on p can take: one per TimeStepS until
// MaxSimulationTimeS, and the step at zero (a 3600 s run of 0.1 s steps has
// at most 36001). It is +Inf when the quotient leaves the float range.
func StepBound(p Plant) float64 {
	return math.Ceil(p.MaxSimulationTimeS/p.TimeStepS) + 1
}

// CheckWork returns a *LimitError when a run on p with opt could take more
// than opt's step limit (Options.MaxSteps, else DefaultMaxSteps), or keep
// more than MaxTrajectorySamples trajectory samples. A plant whose time
// step or simulation time is not finite and positive is left to
// Plant.Validate.
func CheckWork(p Plant, opt Options) error { return checkWork(p, opt, 1) }

// checkWork is CheckWork for plants plants held at once: each could take
// too many steps, or their trajectories together keep too many samples.
// The error's Plants is plants when there are several.
func checkWork(p Plant, opt Options, plants int) error {
	if !(p.TimeStepS > 0 && p.MaxSimulationTimeS > 0) || !finite(p.TimeStepS) || !finite(p.MaxSimulationTimeS) {
		return nil
	}
	several := 0
	if plants > 1 {
		several = plants
	}
	steps := StepBound(p)
	maxSteps := opt.MaxSteps
	if !(maxSteps > 0) {
		maxSteps = DefaultMaxSteps
	}
	if steps > maxSteps {
		return &LimitError{Limit: LimitSteps, Value: steps, Max: maxSteps, MaxSimulationTimeS: p.MaxSimulationTimeS, TimeStepS: p.TimeStepS, Plants: several}
	}
	if opt.Summary {
		return nil
	}
	stride := max(1, opt.Stride)
	// Steps 0, stride, 2*stride, ... and the last, in each plant.
	samples := (math.Ceil(steps/float64(stride)) + 1) * float64(max(1, plants))
	if samples > MaxTrajectorySamples {
		return &LimitError{Limit: LimitTrajectorySamples, Value: samples, Max: MaxTrajectorySamples,
			MaxSimulationTimeS: p.MaxSimulationTimeS, TimeStepS: p.TimeStepS, Stride: stride, Plants: several}
	}
	return nil
}

// MinStride is the least stride that keeps a run of steps within
// MaxTrajectorySamples.
func MinStride(steps float64) float64 {
	return math.Ceil(steps / (MaxTrajectorySamples - 1))
}

// MinFleetStride is the least stride that keeps the trajectories of
// plants plants of steps steps each within MaxTrajectorySamples together;
// +Inf when no stride does (a plant keeps at least two samples).
func MinFleetStride(steps float64, plants int) float64 {
	each := math.Floor(MaxTrajectorySamples/float64(max(1, plants))) - 1
	if each < 1 {
		return math.Inf(1)
	}
	return math.Ceil(steps / each)
}

// minPreallocatedSamples is the least trajectory room reserved up front.
const minPreallocatedSamples = 4096

// preallocatedSamples is the trajectory room a run reserves up front: room
// for twice the arrival span (a run rarely lasts longer), within the step
// bound, so within MaxTrajectorySamples for a plant that passes CheckWork;
// a longer run grows the trajectory geometrically, a few allocations in all.
func preallocatedSamples(p Plant, lastArrivalS float64, stride int) int {
	s := float64(max(1, stride))
	capSteps := p.MaxSimulationTimeS/p.TimeStepS + 3
	spanSteps := 2*lastArrivalS/p.TimeStepS + 3
	return int(min(capSteps, max(spanSteps, minPreallocatedSamples*s))/s + 2)
}

// Limits on what a command holds at once, whatever multiplies it: the
// replicas of a fleet, the runs a sweep or a capacity study keeps under
// way (--jobs), the traces of a sweep's axis (and the rows of traces:
// workload.MaxHeldRequests).
const (
	// MaxLiveKVBlocks bounds the prefix-cache blocks of every plant a
	// command holds at once: KVBlockBytes each, so 2^25 blocks take about
	// 1.5 GiB (a fleet of 4096 replicas of 8192 blocks, the default
	// plant's, or 16 of MaxKVBlocks).
	MaxLiveKVBlocks = 1 << 25
	// KVBlockBytes is what a prefix-cache block takes: its 32-byte entry
	// and two 8-byte slots of the hash index.
	KVBlockBytes = 48
)

// LimitLiveKVBlocks names MaxLiveKVBlocks in a LimitError.
const LimitLiveKVBlocks = "live_kv_blocks"

// PrefixCacheBlocks is how many blocks the prefix cache of a plant on p
// with the engine options o allocates up front: 0 without the cache.
func PrefixCacheBlocks(p Plant, o EngineOptions) int {
	if !o.PrefixCache || !(p.KVCapacityTokens >= 1) || math.IsInf(p.KVCapacityTokens, 0) {
		return 0
	}
	return int(min(p.KVCapacityTokens/float64(max(1, o.BlockTokens())), MaxKVBlocks+1))
}

// PlantsAtOnce is how many plants on p with the engine options o a command
// may hold at once within MaxLiveKVBlocks: a number of at least 1, and
// math.MaxInt without the prefix cache.
func PlantsAtOnce(p Plant, o EngineOptions) int {
	blocks := PrefixCacheBlocks(p, o)
	if blocks == 0 {
		return math.MaxInt
	}
	return max(1, MaxLiveKVBlocks/blocks)
}

// CheckPlantsAtOnce is CheckWork for plants plants on p held at once (the
// replicas of a fleet): a *LimitError when one of them could take too many
// steps, when their trajectories together would keep more than
// MaxTrajectorySamples samples, or when their prefix caches together
// would allocate more than MaxLiveKVBlocks blocks. The error's Plants is
// plants.
func CheckPlantsAtOnce(p Plant, opt Options, plants int) error {
	if err := checkWork(p, opt, plants); err != nil {
		return err
	}
	return CheckLiveKVBlocks(p, opt.Engine, plants)
}

// CheckLiveKVBlocks returns a *LimitError when plants plants on p with the
// engine options o, held at once, would allocate more than
// MaxLiveKVBlocks prefix-cache blocks between them.
func CheckLiveKVBlocks(p Plant, o EngineOptions, plants int) error {
	if blocks := float64(PrefixCacheBlocks(p, o)) * float64(plants); blocks > MaxLiveKVBlocks {
		return &LimitError{Limit: LimitLiveKVBlocks, Value: blocks, Max: MaxLiveKVBlocks, Plants: plants}
	}
	return nil
}
