package simrun

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
)

// flagged is a Warner on w naming the settings as servesim's flags.
func flagged(w io.Writer) runparams.Warner {
	return runparams.Warner{Writer: w, Name: func(s runparams.Setting) string { return "--" + string(s) }}
}

func TestWarnArrivalsPastMaxSimTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		last       float64
		maxSimTime float64
		unfinished float64
		want       string
	}{
		{"arrivals within the cap", 3500, 3600, 1, ""},
		{"arrivals at the cap", 3600, 3600, 1, ""},
		{"past the cap", 5838.2, 3600, 812,
			"servesim: 812 of 2 requests could not complete: arrivals run to 5838.2 s, past --max-sim-time 3600; " +
				"--max-sim-time 6480 covers them (the last arrival plus 10%, rounded up to a minute)\n"},
		{"a minute exactly", 5400, 10, 1,
			"servesim: 1 of 2 requests could not complete: arrivals run to 5400.0 s, past --max-sim-time 10; " +
				"--max-sim-time 5940 covers them (the last arrival plus 10%, rounded up to a minute)\n"},
		{"past the cap but nothing unfinished", 5000, 3600, 0, ""},
		{"dilated by a --normalize close to 0", 3.536311842105262e+299, 3600, 2202,
			"servesim: 2202 of 2 requests could not complete: arrivals run to 3.536311842105262e+299 s, past --max-sim-time 3600; " +
				"--max-sim-time 3.889943026315788e+299 covers them (the last arrival plus 10%, rounded up to a minute)\n"},
		{"dilated past any --max-sim-time", 1.7e+308, 3600, 1,
			"servesim: 1 of 2 requests could not complete: arrivals run to 1.7e+308 s, past --max-sim-time 3600 and past any other\n"},
		{"a long time still in digits", 1e14, 3600, 1,
			"servesim: 1 of 2 requests could not complete: arrivals run to 100000000000000.0 s, past --max-sim-time 3600; " +
				"--max-sim-time 110000000000040 covers them (the last arrival plus 10%, rounded up to a minute)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			warnArrivalsPastMaxSimTime(flagged(&errOut), tt.last, 2, tt.maxSimTime, tt.unfinished)
			assert.Equal(t, tt.want, errOut.String())
		})
	}
}

func TestWarnNormalizeUnchanged(t *testing.T) {
	t.Parallel()
	one, stretched := 1.0, 2.5
	tests := []struct {
		name     string
		target   float64
		dilation *float64
		want     string
	}{
		{"no --normalize", 0, nil, ""},
		{"stretched", 0.6, &stretched, ""},
		{"already below the target", 0.6, &one,
			"servesim: --normalize 0.6: the trace already offers less than that share of the maximum-clock capacity, so its arrivals are unchanged " +
				"(normalization only stretches a trace, as the reference's does; dilation 1)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			warnNormalizeUnchanged(flagged(&errOut), tt.target, tt.dilation)
			assert.Equal(t, tt.want, errOut.String())
		})
	}
}

func TestWarnFixedClock(t *testing.T) {
	t.Parallel()
	prof := profile.Default() // levels 420, 690, 960, ..., 2040 MHz
	tests := []struct{ spec, want string }{
		{"fixed:1000", "servesim: --controller fixed:1000: the profile has no 1000 MHz level; using 960 MHz (the highest level below it)\n"},
		{"fixed:1000.5", "servesim: --controller fixed:1000.5: the profile has no 1000.5 MHz level; using 960 MHz (the highest level below it)\n"},
		{"fixed:100", "servesim: --controller fixed:100: the profile has no 100 MHz level; using 420 MHz (its lowest level)\n"},
		{"fixed:9000", "servesim: --controller fixed:9000: the profile has no 9000 MHz level; using 2040 MHz (its highest level)\n"},
		{"fixed:960", ""},
		{"max", ""},
		{"sampled-reactive:2", ""},
	}
	for _, tt := range tests {
		ctrl, err := plant.NewController(tt.spec)
		assert.NoError(t, err)
		var errOut bytes.Buffer
		warnFixedClock(flagged(&errOut), tt.spec, ctrl, prof)
		assert.Equal(t, tt.want, errOut.String(), tt.spec)
	}
}

func TestFleetCheckDecidesWhetherTheRunIsAFleets(t *testing.T) {
	t.Parallel()
	one := Fleet{Replicas: 1, Router: "round-robin", RouterSeed: 1, Link: fleet.Link{BandwidthGBps: fleet.DefaultKVTransferBandwidthGBps}}
	f := one
	require.NoError(t, f.Check(true, false))
	assert.False(t, f.Enabled, "one replica, no router: one GPU")
	f = one
	require.NoError(t, f.Check(false, true))
	assert.True(t, f.Enabled, "a router asks for a fleet")
	f = one
	f.Replicas = 2
	require.NoError(t, f.Check(false, false))
	assert.True(t, f.Enabled)
	for _, tt := range []struct {
		edit  func(*Fleet)
		field runparams.Setting
		want  string
	}{
		{func(f *Fleet) { f.Replicas = 0 }, "replicas", "replicas 0: expected a whole number from 1 to 4096"},
		{func(f *Fleet) { f.Router = "fastest" }, "router", `router "fastest": expected round-robin, random, least-outstanding, least-tokens`},
		{func(f *Fleet) { f.Jobs = -1 }, "jobs", "jobs -1: expected a nonnegative number (0: all cores)"},
		{func(f *Fleet) { f.Path = "fleet.json" }, "normalize", "normalize cannot be combined with fleet"},
	} {
		f := one
		tt.edit(&f)
		err := f.Check(true, false)
		assert.ErrorContains(t, err, tt.want)
		var fe *runparams.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, tt.field, fe.Field)
	}
}

// TestPlainOracleGroups: the plain oracle takes a fleet without a file,
// or a file of one prefill and one decode group (one plan per pool); any
// other fleet file is a usage error (exit 2) once it is read.
func TestPlainOracleGroups(t *testing.T) {
	prefill := fleet.Group{Name: "p", Role: fleet.RolePrefill}
	decode := fleet.Group{Name: "d", Role: fleet.RoleDecode}
	for _, tc := range []struct {
		name   string
		path   string
		policy string
		groups []fleet.Group
		ok     bool
	}{
		{"no fleet file", "", "oracle", []fleet.Group{{Name: "group0"}}, true},
		{"a prefill and a decode group", "pd.json", "oracle:window=600", []fleet.Group{prefill, decode}, true},
		{"another policy", "mixed.json", "queue:target=2", []fleet.Group{{Name: "a"}, {Name: "b"}}, true},
		{"a mixed fleet file", "mixed.json", "oracle", []fleet.Group{{Name: "a"}, {Name: "b"}}, false},
		{"two decode groups", "pdd.json", "oracle", []fleet.Group{prefill, decode, decode}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Fleet{Path: tc.path, Scale: Scale{Policy: tc.policy}}
			err := f.plainOracleGroups(tc.groups)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var late *runparams.LateUsageError
			require.ErrorAs(t, err, &late)
			assert.Equal(t, 2, late.ExitCode())
			assert.Contains(t, err.Error(), "autoscale "+tc.policy+": plans one count for one group, or one per pool")
		})
	}
}
