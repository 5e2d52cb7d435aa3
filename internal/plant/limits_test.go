package plant

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/limits"
	"servesim/internal/profile"
	"servesim/internal/testsupport"
)

func TestCheckWork(t *testing.T) {
	plantWith := func(stepS, maxSimS float64) Plant {
		p := NewPlant(profile.Default())
		p.TimeStepS, p.MaxSimulationTimeS = stepS, maxSimS
		return p
	}
	tests := []struct {
		name      string
		stepS     float64
		maxSimS   float64
		opt       Options
		wantLimit string // "" when the run is within the limits
		want      string
	}{
		{"defaults", 0.1, 3600, Options{}, "", ""},
		{"a day, every step kept", 0.1, 86400, Options{Stride: 1}, "", ""},
		{"1e-9 s steps", 1e-9, 3600, Options{Summary: true}, LimitSteps,
			"maximum_simulation_time_s 3600 / time_step_s 1e-09 = 3.6e+12 simulation steps: more than max_steps 1e+09"},
		{"1e-300 s steps", 1e-300, 3600, Options{Summary: true}, LimitSteps, "= 3.6e+303 simulation steps"},
		{"a quotient past the float range", 1e-320, 3600, Options{Summary: true}, LimitSteps, "= over 1.8e+308 simulation steps"},
		{"1e18 s of simulated time", 0.1, 1e18, Options{Summary: true}, LimitSteps, "= 1e+19 simulation steps"},
		{"raised step limit", 1e-6, 3600, Options{Summary: true, MaxSteps: 4e9}, "", ""},
		{"just over a raised limit", 1e-6, 3600, Options{Summary: true, MaxSteps: 3.6e9}, LimitSteps, "more than max_steps 3.6e+09"},
		{"exactly the step limit", 1, 1e9 - 1, Options{Summary: true}, "", ""},
		{"one step over", 1, 1e9, Options{Summary: true}, LimitSteps, "= 1000000001 simulation steps: more than max_steps 1e+09"},
		{"a long kept trajectory", 0.1, 1e7, Options{Stride: 1}, LimitTrajectorySamples,
			"maximum_simulation_time_s 1e+07 / time_step_s 0.1 = 1e+08 simulation steps at stride 1 keep 1e+08 trajectory samples: more than trajectory_samples 1e+07"},
		{"the same thinned enough", 0.1, 1e7, Options{Stride: int(MinStride(1e8 + 1))}, "", ""},
		{"the same as a summary", 0.1, 1e7, Options{Summary: true}, "", ""},
		{"invalid plants are Validate's", 0, 3600, Options{}, "", ""},
		{"NaN time step", math.NaN(), 3600, Options{}, "", ""},
		{"infinite simulation time", 0.1, math.Inf(1), Options{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckWork(plantWith(tt.stepS, tt.maxSimS), tt.opt)
			if tt.wantLimit == "" {
				require.NoError(t, err)
				return
			}
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.wantLimit, le.Limit)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestSimulateRefusesWorkPastTheLimitsBeforeAllocating checks that the
// library refuses the run itself, whoever calls it.
func TestSimulateRefusesWorkPastTheLimitsBeforeAllocating(t *testing.T) {
	p := NewPlant(profile.Default())
	p.TimeStepS = 1e-9
	requests := []Request{{ID: 0, PromptTokens: 10, OutputTokens: 2}}
	var res *Result
	var err error
	allocs := testing.AllocsPerRun(1, func() {
		res, err = Simulate(requests, p, ChunkedPrefill{}, MaxClock{}, Options{})
	})
	assert.Nil(t, res)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitSteps, le.Limit)
	assert.Less(t, allocs, 10.0, "refused before the simulation state is built")
}

func TestPreallocationStaysWithinTheTrajectoryLimit(t *testing.T) {
	p := NewPlant(profile.Default())
	p.MaxSimulationTimeS = (MaxTrajectorySamples - 2) * p.TimeStepS
	require.NoError(t, CheckWork(p, Options{Stride: 1}))
	// A trace spanning years asks for room for twice its span.
	got := preallocatedSamples(p, 3e8, 1)
	assert.LessOrEqual(t, float64(got), MaxTrajectorySamples+3)
	assert.Equal(t, 4098, preallocatedSamples(p, 0, 1), "a short trace reserves the minimum")
}

// FuzzStepLimit checks, over any time step, simulated time, stride and
// step limit, that CheckWork never panics and that a run it accepts stays
// within the limits: its step bound within the step limit and its
// preallocated trajectory within MaxTrajectorySamples.
func FuzzStepLimit(f *testing.F) {
	f.Add(0.1, 3600.0, 1, false, 0.0, 10.0)
	f.Add(1e-9, 3600.0, 1, true, 0.0, 0.0)
	f.Add(1e-300, 1e18, 50, false, 5e9, 1e12)
	f.Add(1e-320, 3600.0, 0, true, -1.0, 1e300)
	f.Add(0.1, 1e7, 1, false, 0.0, 1e9)
	f.Fuzz(func(t *testing.T, stepS, maxSimS float64, stride int, summary bool, maxSteps, lastArrivalS float64) {
		if stride < 0 {
			stride = -stride
		}
		if stride < 0 { // math.MinInt
			stride = 1
		}
		p := NewPlant(profile.Default())
		p.TimeStepS, p.MaxSimulationTimeS = stepS, maxSimS
		opt := Options{Stride: stride, Summary: summary, MaxSteps: maxSteps}
		err := CheckWork(p, opt)
		if err != nil {
			var le *LimitError
			if !errors.As(err, &le) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("not a one-line *LimitError: %v", err)
			}
			return
		}
		if p.Validate() != nil {
			return
		}
		limit := maxSteps
		if !(limit > 0) {
			limit = DefaultMaxSteps
		}
		if steps := StepBound(p); !(steps <= limit) {
			t.Fatalf("accepted %g steps, limit %g", steps, limit)
		}
		if summary || !(lastArrivalS >= 0) || math.IsInf(lastArrivalS, 0) {
			return
		}
		if n := preallocatedSamples(p, lastArrivalS, stride); n < 0 || float64(n) > MaxTrajectorySamples+3 {
			t.Fatalf("preallocates %d samples", n)
		}
	})
}

// TestLoadWorkloadCapsWhatItReads feeds the trace reader endless and
// oversized inputs: each must fail with one line naming the trace and the
// cap or the line, after reading a bounded number of bytes.
func TestLoadWorkloadCapsWhatItReads(t *testing.T) {
	const header = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	caps := traceCaps{maxBytes: 1 << 20, maxLine: 4 << 10}
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789+/\n" // no NUL, short lines, not a trace
	tests := []struct {
		name     string
		in       io.Reader
		want     string
		maxRead  int64 // bytes the reader may consume before failing
		tooLarge bool
	}{
		{"/dev/zero", testsupport.Endless("\x00"), "trace t.csv line 1: contains a NUL byte: expected text", 64 << 10, false},
		{"/dev/urandom", rand.NewChaCha8([32]byte{1}), "trace t.csv line ", 64 << 10, false},
		{"text that is not a trace", testsupport.Endless(letters), "trace t.csv line 1: missing column TIMESTAMP", 64 << 10, false},
		{"a header, then zeros", io.MultiReader(strings.NewReader(header), testsupport.Endless("\x00")), "trace t.csv line 2: contains a NUL byte", 64 << 10, false},
		{"a header, then one endless line", io.MultiReader(strings.NewReader(header), testsupport.Endless("1,")), "trace t.csv line 2: longer than the 4 KiB line cap", 64 << 10, false},
		{"a header, then endless rows", io.MultiReader(strings.NewReader(header), testsupport.Endless("2023-11-16 18:17:03.9799600,10,2\n")),
			"trace t.csv: larger than the 1 MiB cap", caps.maxBytes + 1, true},
		{"a header line longer than the line cap", testsupport.Endless("TIMESTAMP,"), "trace t.csv line 1: longer than the 4 KiB line cap", 64 << 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &testsupport.CountingReader{R: tt.in}
			_, err := loadWorkload(in, "t.csv", NoElapsedLimit, caps)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
			assert.LessOrEqual(t, in.N, tt.maxRead, "bytes read before failing")
			var tooLarge *limits.TooLargeError
			assert.Equal(t, tt.tooLarge, errors.As(err, &tooLarge))
		})
	}
}

func TestLoadWorkloadChecksTheHeaderBeforeReadingTheRest(t *testing.T) {
	// 8 MiB of text after a wrong header: only the first chunk is read.
	body := "time,prompt,output\n" + strings.Repeat("2023-11-16 18:17:03,10,2\n", 8<<20/25)
	in := &testsupport.CountingReader{R: strings.NewReader(body)}
	_, err := LoadWorkload(struct{ io.Reader }{in}, "t.csv", NoElapsedLimit)
	require.EqualError(t, err, "trace t.csv line 1: missing column TIMESTAMP: trace must contain Azure columns ContextTokens, GeneratedTokens, TIMESTAMP")
	assert.LessOrEqual(t, in.N, int64(64<<10))

	// A header that needs the quoting rules is checked by the full parse.
	w, err := LoadWorkload(strings.NewReader("\"TIMESTAMP\",ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,2\n"), "q.csv", NoElapsedLimit)
	require.NoError(t, err)
	assert.Len(t, w.Requests, 1)
	// A blank first line is the header, as csv.DictReader reads it (its
	// fieldnames are []).
	_, err = LoadWorkload(strings.NewReader("\r\n\nTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,2\n"), "b.csv", NoElapsedLimit)
	assert.ErrorContains(t, err, "trace b.csv line 1: missing column TIMESTAMP")
}

func TestLoadWorkloadRefusesALargeFileWithoutReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse.csv")
	testsupport.SparseFile(t, path, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"), 30<<30)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = LoadWorkload(f, path, NoElapsedLimit)
	require.EqualError(t, err, "trace "+path+": 30 GiB: larger than the 4 GiB cap")
	offset, err := f.Seek(0, io.SeekCurrent)
	require.NoError(t, err)
	assert.Zero(t, offset, "nothing read")
}

func TestLoadWorkloadAcceptsATraceOfExactlyTheCap(t *testing.T) {
	body := []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,2\n")
	w, err := loadWorkload(bytes.NewReader(body), "t.csv", NoElapsedLimit, traceCaps{maxBytes: int64(len(body)), maxLine: 40})
	require.NoError(t, err)
	assert.Len(t, w.Requests, 1)
	_, err = loadWorkload(bytes.NewReader(body), "t.csv", NoElapsedLimit, traceCaps{maxBytes: int64(len(body)) - 1, maxLine: 40})
	assert.EqualError(t, err, "trace t.csv: 65 bytes: larger than the 64 bytes cap")
}
