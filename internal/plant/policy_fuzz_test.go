package plant

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"servesim/internal/profile"
)

// FuzzNewController parses controller and scheduler specs: it never panics,
// a refused spec's error quotes it, and an accepted controller requests a
// finite clock that the plant can quantize. An exec: controller is not
// consulted: that would run the fuzzed command.
func FuzzNewController(f *testing.F) {
	for _, seed := range []string{
		"max", "min", "reactive", "sampled-reactive", "sampled-reactive:2.5", "fixed:660", "fixed:1e6",
		"fixed:", "fixed", "fixed:x", "fixed:-1", "fixed:inf", "fixed:NaN", "fixed:0x1p10", "fixed:1_000",
		"sampled-reactive:0", "sampled-reactive:nan", "reactive:1", "static", "chunked", "", ":", "fixed::1",
		"race-to-idle", "race-to-idle:1500", "race-to-idle:", "race-to-idle:0", "exec:", "exec: ", "exec:true", "exec",
		"mpc", "mpc:", "mpc:period=0.5,horizon=10", "mpc:foo=1", "mpc:budget=0", "mpc:deadline=1e-3", "mpc:attainment=0.9,attainment=0.8",
		"mpc-clairvoyant", "mpc-clairvoyant:attainment=1", "mpc:horizon=1001", "mpc:period", "mpcx",
	} {
		f.Add(seed)
	}
	prof := profile.Default()
	obs := Observation{ClockLevelsMHz: prof.ClockMHz, RealizedClockLevelsMHz: prof.RealizedClockLevelsMHz(), PreviousClockMHz: prof.MinClockMHz()}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := NewController(spec)
		if err != nil {
			if c != nil {
				t.Fatalf("%q: a controller and an error", spec)
			}
			if !strings.Contains(err.Error(), strconv.Quote(spec)) {
				t.Fatalf("%q: the error does not quote the spec: %v", spec, err)
			}
		} else {
			if c.Name() == "" {
				t.Fatalf("%q: no name", spec)
			}
			if e, ok := c.(*ExecController); ok {
				if e.Command != strings.TrimPrefix(spec, "exec:") || strings.TrimSpace(e.Command) == "" {
					t.Fatalf("%q: command %q", spec, e.Command)
				}
			} else {
				mhz := c.RequestClock(obs)
				if math.IsNaN(mhz) || math.IsInf(mhz, 0) || mhz <= 0 {
					t.Fatalf("%q: requests %v MHz", spec, mhz)
				}
				if f, ok := c.(FixedClock); ok && f.Level(prof) != prof.QuantizeClock(mhz, true) {
					t.Fatalf("%q: level %v", spec, f.Level(prof))
				}
			}
		}
		s, err := NewScheduler(spec)
		if (err == nil) == (s == nil) {
			t.Fatalf("%q: scheduler %v, error %v", spec, s, err)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(spec)) {
			t.Fatalf("%q: the error does not quote the name: %v", spec, err)
		}
	})
}
