package calibrate

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// MinLevelSamples is the fewest power samples FitPower fits a clock level
// from (one second of a log every 100 ms).
const MinLevelSamples = 10

// MinThermalSamples is the fewest samples FitThermal fits from.
const MinThermalSamples = 20

// maxPowerCondition is the largest condition number of a level's shares
// (idle, prefill, decode) FitPower solves: beyond it one of the powers is
// all but undetermined, and its fitted value is noise.
const maxPowerCondition = 1e6

// LevelPower is a profile's power at one clock level, fitted from a power
// log (FitPower).
type LevelPower struct {
	// ClockMHz is the level's SM clock.
	ClockMHz float64 `json:"clock_mhz"`
	// IdleW, PrefillW and DecodeW are the board power while idle, while
	// prefilling and while decoding, W.
	IdleW    float64 `json:"idle_power_w"`
	PrefillW float64 `json:"prefill_power_w"`
	DecodeW  float64 `json:"decode_power_w"`
	// Samples is how many of the log's samples it was fitted from.
	Samples int `json:"samples"`
}

// ThermalFit is the plant's first-order thermal model fitted from a power
// log (FitThermal): the temperature relaxes towards AmbientC +
// ResistanceCPerW * power with time constant TimeConstantS.
type ThermalFit struct {
	// AmbientC is the temperature at no power, °C.
	AmbientC float64 `json:"ambient_c"`
	// ResistanceCPerW is the temperature rise per W at equilibrium, °C/W.
	ResistanceCPerW float64 `json:"thermal_resistance_c_per_w"`
	// TimeConstantS is the relaxation time constant, s.
	TimeConstantS float64 `json:"thermal_time_constant_s"`
	// RSquared is the share of the temperature's variance the model
	// explains.
	RSquared float64 `json:"r_squared"`
}

// Activity says what the GPU did between two times of a power log,
// seconds since its first sample: the shares of the interval it spent
// prefilling and decoding (the rest idle), each in [0, 1] and summing to at
// most 1. A simulated replay of the logged run answers it.
type Activity func(fromS, toS float64) (prefillShare, decodeShare float64)

// FitPower fits, per clock level, the idle, prefill and decode powers of
//
//	P = idle + (prefill - idle)*prefillShare + (decode - idle)*decodeShare
//
// by least squares over the log's samples. Each sample but the first
// stands for the interval since the one before, whose shares activity
// gives, and belongs to the level nearest its SM clock. levels are the
// profile's clock levels, MHz; the result holds the levels with samples, in
// increasing clock order (a level the log never ran at is left out). A
// level with fewer than MinLevelSamples samples, or whose shares cannot
// tell its three powers apart (it never prefilled, never decoded, never
// idled, or its shares move together), is an error naming it.
func FitPower(log *PowerLog, activity Activity, levels []float64) ([]LevelPower, error) {
	if log == nil || len(log.Samples) < 2 {
		return nil, fmt.Errorf("power fit: expected a power log of at least 2 samples")
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("power fit %s: no clock levels: expected the profile's levels", log.File)
	}
	sorted := slices.Clone(levels)
	sort.Float64s(sorted)
	for i, l := range sorted {
		if !(l > 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("power fit %s: clock level %v: expected a positive number of MHz", log.File, l)
		}
		if i > 0 && l == sorted[i-1] {
			return nil, fmt.Errorf("power fit %s: clock level %v MHz given twice: expected distinct levels", log.File, l)
		}
	}
	type row struct{ idle, prefill, decode, power float64 }
	rows := make([][]row, len(sorted))
	for k := 1; k < len(log.Samples); k++ {
		prev, s := log.Samples[k-1], log.Samples[k]
		p, d := activity(prev.TimeS, s.TimeS)
		if !(p >= 0 && d >= 0 && p+d <= 1+1e-9) {
			return nil, fmt.Errorf("power fit %s: activity from %gs to %gs: prefill %v, decode %v: expected shares in [0, 1] summing to at most 1", log.File, prev.TimeS, s.TimeS, p, d)
		}
		i := nearestLevel(sorted, s.SMClockMHz)
		idle := 1 - p - d
		if idle < 1e-9 {
			idle = 0 // busy throughout, whatever the rounding of the shares
		}
		rows[i] = append(rows[i], row{idle, p, d, s.PowerW})
	}
	var fits []LevelPower
	for i, lr := range rows {
		if len(lr) == 0 {
			continue
		}
		clock := sorted[i]
		if len(lr) < MinLevelSamples {
			return nil, fmt.Errorf("power fit %s: %d samples at %v MHz: expected at least %d to fit its powers", log.File, len(lr), clock, MinLevelSamples)
		}
		a := mat.NewDense(len(lr), 3, nil)
		b := mat.NewVecDense(len(lr), nil)
		for r, x := range lr {
			a.Set(r, 0, x.idle)
			a.Set(r, 1, x.prefill)
			a.Set(r, 2, x.decode)
			b.SetVec(r, x.power)
		}
		var svd mat.SVD
		if !svd.Factorize(a, mat.SVDThin) {
			return nil, fmt.Errorf("power fit %s: the shares at %v MHz cannot be factorized", log.File, clock)
		}
		values := svd.Values(nil)
		if values[2] <= values[0]/maxPowerCondition {
			return nil, undeterminedPower(log.File, clock, a, &svd, values)
		}
		var x mat.Dense
		svd.SolveTo(&x, b, 3)
		fits = append(fits, LevelPower{ClockMHz: clock, IdleW: x.At(0, 0), PrefillW: x.At(1, 0), DecodeW: x.At(2, 0), Samples: len(lr)})
	}
	return fits, nil
}

// undeterminedPower says which power of a level its shares cannot fit: the
// one the least determined direction (the right singular vector of the
// smallest singular value) leans on most.
func undeterminedPower(file string, clock float64, a *mat.Dense, svd *mat.SVD, values []float64) error {
	names := [3]string{"idle", "prefill", "decode"}
	var v mat.Dense
	svd.VTo(&v)
	worst := 0
	for j := 1; j < 3; j++ {
		if math.Abs(v.At(j, 2)) > math.Abs(v.At(worst, 2)) {
			worst = j
		}
	}
	if mat.Sum(a.ColView(worst)) == 0 {
		what := map[int]string{0: "never idle", 1: "no prefill", 2: "no decode"}[worst]
		return fmt.Errorf("power fit %s: %s at %v MHz: %s power cannot be fitted", file, what, clock, names[worst])
	}
	cond := math.Inf(1)
	if values[2] > 0 {
		cond = values[0] / values[2]
	}
	return fmt.Errorf("power fit %s: the %s share at %v MHz hardly varies apart from the others (condition number %.3g, expected below %.0g): %s power cannot be fitted", file, names[worst], clock, cond, maxPowerCondition, names[worst])
}

// nearestLevel is the index of the level of sorted nearest mhz, the lower
// one on a tie.
func nearestLevel(sorted []float64, mhz float64) int {
	i := sort.SearchFloat64s(sorted, mhz)
	switch {
	case i == 0:
		return 0
	case i == len(sorted):
		return i - 1
	case mhz-sorted[i-1] <= sorted[i]-mhz:
		return i - 1
	}
	return i
}

// FitThermal fits the plant's first-order thermal model
//
//	dT/dt = (ambient + R*P - T) / tau
//
// to the log's temperature and power: over the interval from each sample
// to the next the power is the first one's, so the temperature moves as
// the plant's does, T' = eq + (T - eq)*exp(-dt/tau) with eq = ambient +
// R*P. The fit is on the simulated temperature (output error): for a time
// constant, the temperature the model predicts from the log's power is
// linear in the starting temperature, ambient and R, solved by least
// squares, and the time constant is searched (a log-spaced grid from the
// median sample interval to ten times the log's length, then a golden
// section search). Regressing each temperature on the one before would be
// biased: nvidia-smi writes whole degrees, and at 100 ms a step moves the
// temperature by a small fraction of a degree, so the rounding swamps
// what each step says about tau. The log needs MinThermalSamples samples,
// a varying power and a temperature that moves by at least 2 °C, and the
// time constant must fall inside the range searched.
func FitThermal(log *PowerLog) (ThermalFit, error) {
	if log == nil {
		return ThermalFit{}, fmt.Errorf("thermal fit: expected a power log")
	}
	n := len(log.Samples)
	if n < MinThermalSamples {
		return ThermalFit{}, fmt.Errorf("thermal fit %s: %d samples: expected at least %d", log.File, n, MinThermalSamples)
	}
	minT, maxT := math.Inf(1), math.Inf(-1)
	var sumP, sumT float64
	for _, s := range log.Samples {
		minT, maxT = min(minT, s.TemperatureC), max(maxT, s.TemperatureC)
		sumP += s.PowerW
		sumT += s.TemperatureC
	}
	meanP, meanT := sumP/float64(n), sumT/float64(n)
	var ssP, ssT float64
	for _, s := range log.Samples {
		ssP += (s.PowerW - meanP) * (s.PowerW - meanP)
		ssT += (s.TemperatureC - meanT) * (s.TemperatureC - meanT)
	}
	if sd := math.Sqrt(ssP / float64(n)); sd < 1 {
		return ThermalFit{}, fmt.Errorf("thermal fit %s: the power hardly varies (standard deviation %.3g W, expected at least 1 W): ambient and thermal resistance cannot be told apart", log.File, sd)
	}
	if maxT-minT < 2 {
		return ThermalFit{}, fmt.Errorf("thermal fit %s: the temperature moves by %.3g °C: expected at least 2 °C to fit the time constant", log.File, maxT-minT)
	}
	dts := make([]float64, n-1)
	for k := range dts {
		dts[k] = log.Samples[k+1].TimeS - log.Samples[k].TimeS
	}
	sortedDts := slices.Clone(dts)
	slices.Sort(sortedDts)
	lo, hi := sortedDts[len(sortedDts)/2], 10*log.Samples[n-1].TimeS
	fit := thermalFitter{log: log, dts: dts}
	// A log-spaced grid, then a golden section search between the grid
	// points around the best one.
	const grid = 80
	taus := make([]float64, grid)
	costs := make([]float64, grid)
	best := 0
	for i := range taus {
		taus[i] = lo * math.Pow(hi/lo, float64(i)/(grid-1))
		costs[i] = fit.cost(taus[i])
		if costs[i] < costs[best] {
			best = i
		}
	}
	if best == 0 || best == grid-1 {
		edge := "shorter than the median sample interval"
		if best == grid-1 {
			edge = "longer than ten times the log"
		}
		return ThermalFit{}, fmt.Errorf("thermal fit %s: the time constant looks %s (%.3g s): expected one between %.3g s and %.3g s", log.File, edge, taus[best], lo, hi)
	}
	a, b := math.Log(taus[best-1]), math.Log(taus[best+1])
	golden := (math.Sqrt(5) - 1) / 2
	c, d := b-golden*(b-a), a+golden*(b-a)
	fc, fd := fit.cost(math.Exp(c)), fit.cost(math.Exp(d))
	for range 60 {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - golden*(b-a)
			fc = fit.cost(math.Exp(c))
		} else {
			a, c, fc = c, d, fd
			d = a + golden*(b-a)
			fd = fit.cost(math.Exp(d))
		}
	}
	tau := math.Exp((a + b) / 2)
	coef, sse, ok := fit.solve(tau)
	if !ok {
		return ThermalFit{}, fmt.Errorf("thermal fit %s: ambient and thermal resistance cannot be told apart at a time constant of %.3g s", log.File, tau)
	}
	r2 := math.NaN()
	if ssT > 0 {
		r2 = 1 - sse/ssT
	}
	return ThermalFit{AmbientC: coef[1], ResistanceCPerW: coef[2], TimeConstantS: tau, RSquared: r2}, nil
}

// thermalFitter solves the linear part of the thermal fit for a time
// constant.
type thermalFitter struct {
	log *PowerLog
	dts []float64
}

// cost is the sum of squared temperature errors at time constant tau
// (+Inf when the linear part cannot be solved).
func (f *thermalFitter) cost(tau float64) float64 {
	if _, sse, ok := f.solve(tau); ok {
		return sse
	}
	return math.Inf(1)
}

// solve fits the starting temperature, ambient and R at time constant tau:
// the predicted temperature is T0*g0 + ambient*g1 + R*g2, where g0 is the
// decay of the starting temperature, g1 = 1 - g0 and g2 the response to
// the logged power. It returns the three and the sum of squared errors.
func (f *thermalFitter) solve(tau float64) ([3]float64, float64, bool) {
	samples := f.log.Samples
	n := len(samples)
	a := mat.NewDense(n, 3, nil)
	b := mat.NewVecDense(n, nil)
	g0, g2 := 1.0, 0.0
	for k, s := range samples {
		if k > 0 {
			decay := math.Exp(-f.dts[k-1] / tau)
			g0 *= decay
			g2 = samples[k-1].PowerW*(1-decay) + g2*decay
		}
		a.Set(k, 0, g0)
		a.Set(k, 1, 1-g0)
		a.Set(k, 2, g2)
		b.SetVec(k, s.TemperatureC)
	}
	var qr mat.QR
	qr.Factorize(a)
	var x mat.VecDense
	if err := qr.SolveVecTo(&x, false, b); err != nil {
		return [3]float64{}, 0, false
	}
	var residual mat.VecDense
	residual.MulVec(a, &x)
	residual.SubVec(b, &residual)
	sse := mat.Dot(&residual, &residual)
	return [3]float64{x.AtVec(0), x.AtVec(1), x.AtVec(2)}, sse, true
}
