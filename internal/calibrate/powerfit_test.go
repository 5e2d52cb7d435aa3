package calibrate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleDt is the synthetic logs' sample interval, s (-lms 100).
const sampleDt = 0.1

// shares are an activity's prefill and decode shares per interval: the
// interval ending at sample k is shares[k].
type shares [][2]float64

// activity answers for the interval ending at toS.
func (s shares) activity(_, toS float64) (float64, float64) {
	k := int(math.Round(toS / sampleDt))
	return s[k][0], s[k][1]
}

// randomShares draws n intervals' shares: a fifth idle, a fifth only
// decoding, the rest a random mix.
func randomShares(r *rand.Rand, n int) shares {
	s := make(shares, n)
	for k := range s {
		switch u := r.Float64(); {
		case u < 0.2:
		case u < 0.4:
			s[k] = [2]float64{0, 1}
		default:
			p := r.Float64() * 0.6
			s[k] = [2]float64{p, r.Float64() * (1 - p)}
		}
	}
	return s
}

// powerAt is a level's power for an interval's shares.
func powerAt(l LevelPower, prefill, decode float64) float64 {
	return l.IdleW + (l.PrefillW-l.IdleW)*prefill + (l.DecodeW-l.IdleW)*decode
}

// synthPowerLog is a log of n samples every sampleDt whose power follows
// the levels' powers and act, at levels[0]'s clock for the first half and
// levels[1]'s for the second (the clock read a little off the level, as
// nvidia-smi reads it), with Gaussian noise of noiseW.
func synthPowerLog(r *rand.Rand, levels []LevelPower, act shares, noiseW float64) *PowerLog {
	n := len(act)
	log := &PowerLog{File: "gpu.csv", Samples: make([]PowerSample, n)}
	for k := range log.Samples {
		level := levels[min(len(levels)-1, 2*k/n)]
		p := powerAt(level, act[k][0], act[k][1]) + noiseW*r.NormFloat64()
		log.Samples[k] = PowerSample{TimeS: float64(k) * sampleDt, PowerW: math.Round(p*100) / 100,
			SMClockMHz: level.ClockMHz - float64(r.IntN(3))*15, MemClockMHz: 6251, TemperatureC: 60, UtilizationPct: 90}
	}
	return log
}

// reread writes log as nvidia-smi would and reads it back.
func reread(t *testing.T, log *PowerLog) *PowerLog {
	t.Helper()
	again, err := ParsePowerLog(log.File, formatPowerLog(log.Samples))
	require.NoError(t, err)
	return again
}

func TestFitPowerRoundTrip(t *testing.T) {
	truth := []LevelPower{
		{ClockMHz: 1410, IdleW: 70, PrefillW: 320, DecodeW: 240},
		{ClockMHz: 1005, IdleW: 60, PrefillW: 210, DecodeW: 170},
	}
	tests := []struct {
		name      string
		noiseW    float64
		tolerance float64 // relative
	}{
		{"exact", 0, 0.01},
		{"noise of 8 W", 8, 0.03},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			act := randomShares(r, 6000)
			log := reread(t, synthPowerLog(r, truth, act, tt.noiseW))
			fits, err := FitPower(log, act.activity, []float64{1980, 1410, 1005, 210})
			require.NoError(t, err)
			require.Len(t, fits, 2, "the levels the log ran at, in increasing clock order")
			for i, want := range []LevelPower{truth[1], truth[0]} {
				got := fits[i]
				assert.Equal(t, want.ClockMHz, got.ClockMHz)
				assert.InEpsilon(t, want.IdleW, got.IdleW, tt.tolerance, "idle at %v MHz", want.ClockMHz)
				assert.InEpsilon(t, want.PrefillW, got.PrefillW, tt.tolerance, "prefill at %v MHz", want.ClockMHz)
				assert.InEpsilon(t, want.DecodeW, got.DecodeW, tt.tolerance, "decode at %v MHz", want.ClockMHz)
			}
			assert.Equal(t, 5999, fits[0].Samples+fits[1].Samples, "every sample but the first")
		})
	}
}

func TestFitPowerRefusals(t *testing.T) {
	truth := []LevelPower{{ClockMHz: 1410, IdleW: 70, PrefillW: 320, DecodeW: 240}}
	r := rand.New(rand.NewPCG(3, 4))
	act := randomShares(r, 200)
	log := synthPowerLog(r, truth, act, 0)
	only := func(f func(k int) [2]float64) Activity {
		s := make(shares, len(act))
		for k := range s {
			s[k] = f(k)
		}
		return s.activity
	}
	tests := []struct {
		name     string
		log      *PowerLog
		activity Activity
		levels   []float64
		want     string
	}{
		{"no log", nil, act.activity, []float64{1410}, "power fit: expected a power log of at least 2 samples"},
		{"no levels", log, act.activity, nil, "power fit gpu.csv: no clock levels: expected the profile's levels"},
		{"a level twice", log, act.activity, []float64{1410, 1005, 1410}, "power fit gpu.csv: clock level 1410 MHz given twice: expected distinct levels"},
		{"a bad level", log, act.activity, []float64{1410, math.NaN()}, "power fit gpu.csv: clock level NaN: expected a positive number of MHz"},
		{"shares over 1", log, only(func(int) [2]float64 { return [2]float64{0.8, 0.5} }), []float64{1410},
			"power fit gpu.csv: activity from 0s to 0.1s: prefill 0.8, decode 0.5: expected shares in [0, 1] summing to at most 1"},
		{"negative share", log, only(func(int) [2]float64 { return [2]float64{-0.1, 0.5} }), []float64{1410},
			"power fit gpu.csv: activity from 0s to 0.1s: prefill -0.1, decode 0.5: expected shares in [0, 1] summing to at most 1"},
		{"never prefilled", log, only(func(k int) [2]float64 { return [2]float64{0, float64(k%3) / 2} }), []float64{1410},
			"power fit gpu.csv: no prefill at 1410 MHz: prefill power cannot be fitted"},
		{"never decoded", log, only(func(k int) [2]float64 { return [2]float64{float64(k%3) / 2, 0} }), []float64{1410},
			"power fit gpu.csv: no decode at 1410 MHz: decode power cannot be fitted"},
		{"never idle", log, only(func(k int) [2]float64 { p := float64(k%4) / 4; return [2]float64{p, 1 - p} }), []float64{1410},
			"power fit gpu.csv: never idle at 1410 MHz: idle power cannot be fitted"},
		{"prefill and decode together", log, only(func(k int) [2]float64 { p := float64(k%4) / 8; return [2]float64{p, p} }), []float64{1410},
			"hardly varies apart from the others (condition number"},
		{"too few samples at a level", withClock(log, 1980, 3), act.activity, []float64{1410, 1980},
			"power fit gpu.csv: 3 samples at 1980 MHz: expected at least 10 to fit its powers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FitPower(tt.log, tt.activity, tt.levels)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// withClock is a copy of log whose last n samples ran at mhz.
func withClock(log *PowerLog, mhz float64, n int) *PowerLog {
	c := *log
	c.Samples = append([]PowerSample(nil), log.Samples...)
	for k := len(c.Samples) - n; k < len(c.Samples); k++ {
		c.Samples[k].SMClockMHz = mhz
	}
	return &c
}

func TestNearestLevel(t *testing.T) {
	levels := []float64{210, 1005, 1410}
	for _, tt := range []struct {
		mhz  float64
		want int
	}{{0, 0}, {210, 0}, {607.5, 0}, {608, 1}, {1395, 2}, {2000, 2}} {
		assert.Equal(t, tt.want, nearestLevel(levels, tt.mhz), "%v MHz", tt.mhz)
	}
}

// thermalLog simulates the plant's thermal model (plant's heat: T relaxes
// to ambient + R*P with time constant tau, the power of each interval the
// one read at its start) over a power that steps between random levels
// every 30 to 120 s, sampled every sampleDt for durationS; round writes the
// temperature in whole degrees, as nvidia-smi does.
func thermalLog(truth ThermalFit, durationS float64, round bool) *PowerLog {
	r := rand.New(rand.NewPCG(5, 6))
	n := int(durationS / sampleDt)
	log := &PowerLog{File: "gpu.csv", Samples: make([]PowerSample, n)}
	temperature, power, next := truth.AmbientC+5, 80.0, 0.0
	decay := math.Exp(-sampleDt / truth.TimeConstantS)
	for k := range log.Samples {
		at := float64(k) * sampleDt
		if at >= next {
			power, next = 60+r.Float64()*290, at+30+r.Float64()*90
		}
		shown := temperature
		if round {
			shown = math.Round(temperature)
		}
		log.Samples[k] = PowerSample{TimeS: at, PowerW: math.Round(power*100) / 100, SMClockMHz: 1410,
			MemClockMHz: 6251, TemperatureC: shown, UtilizationPct: math.NaN()}
		equilibrium := truth.AmbientC + truth.ResistanceCPerW*log.Samples[k].PowerW
		temperature = equilibrium + (temperature-equilibrium)*decay
	}
	return log
}

func TestFitThermalRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		truth ThermalFit
		round bool
	}{
		{"exact", ThermalFit{AmbientC: 28, ResistanceCPerW: 0.12, TimeConstantS: 40}, false},
		{"whole degrees", ThermalFit{AmbientC: 28, ResistanceCPerW: 0.12, TimeConstantS: 40}, true},
		{"slow, whole degrees", ThermalFit{AmbientC: 22, ResistanceCPerW: 0.2, TimeConstantS: 150}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := reread(t, thermalLog(tt.truth, 1200, tt.round))
			got, err := FitThermal(log)
			require.NoError(t, err)
			assert.InEpsilon(t, tt.truth.AmbientC, got.AmbientC, 0.02, "ambient")
			assert.InEpsilon(t, tt.truth.ResistanceCPerW, got.ResistanceCPerW, 0.02, "resistance")
			assert.InEpsilon(t, tt.truth.TimeConstantS, got.TimeConstantS, 0.02, "time constant")
			assert.Greater(t, got.RSquared, 0.99)
		})
	}
}

func TestFitThermalRefusals(t *testing.T) {
	steady := thermalLog(ThermalFit{AmbientC: 28, ResistanceCPerW: 0.12, TimeConstantS: 40}, 120, false)
	for k := range steady.Samples {
		steady.Samples[k].PowerW = 200
	}
	flat := thermalLog(ThermalFit{AmbientC: 28, ResistanceCPerW: 0.12, TimeConstantS: 40}, 600, true)
	for k := range flat.Samples {
		flat.Samples[k].TemperatureC = 60
	}
	slow := thermalLog(ThermalFit{AmbientC: 28, ResistanceCPerW: 5, TimeConstantS: 1e5}, 600, false)
	tests := []struct {
		name string
		log  *PowerLog
		want string
	}{
		{"no log", nil, "thermal fit: expected a power log"},
		{"too few samples", &PowerLog{File: "gpu.csv", Samples: steady.Samples[:5]}, "thermal fit gpu.csv: 5 samples: expected at least 20"},
		{"steady power", steady, "thermal fit gpu.csv: the power hardly varies (standard deviation 0 W, expected at least 1 W): ambient and thermal resistance cannot be told apart"},
		{"flat temperature", flat, "thermal fit gpu.csv: the temperature moves by 0 °C: expected at least 2 °C to fit the time constant"},
		{"time constant beyond the log", slow, "thermal fit gpu.csv: the time constant looks longer than ten times the log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FitThermal(tt.log)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "error %q\nwant a prefix %q", err, tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
