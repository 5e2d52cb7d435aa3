package plant

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestRunIsNormalizeThenSimulate(t *testing.T) {
	w, err := DefaultTrace(600)
	require.NoError(t, err)
	prof := profile.Default()
	cfg := Config{
		Plant:       NewPlant(prof),
		Scheduler:   ChunkedPrefill{},
		Controller:  Reactive{},
		Normalize:   0.1, // the embedded trace offers about 0.2: this dilates it
		Options:     Options{Stride: 10},
		ProfilePath: "p.csv",
		Version:     "v1",
	}
	report, err := Run(w, cfg)
	require.NoError(t, err)

	normalized, dilation, err := NormalizeOfferedLoad(w.Requests, prof, 0.1)
	require.NoError(t, err)
	direct, err := Simulate(normalized, cfg.Plant, ChunkedPrefill{}, Reactive{}, Options{Stride: 10})
	require.NoError(t, err)
	require.NotNil(t, report.Dilation)
	assert.Equal(t, dilation, *report.Dilation)
	assert.Greater(t, dilation, 1.0)
	assert.Equal(t, *direct, report.Result)
	assert.Equal(t, direct.Summary(), report.Summary)
	assert.Equal(t, Provenance{
		ProfilePath:      "p.csv",
		ProfileCSVSHA256: prof.ProfileCSVSHA256,
		ManifestSHA256:   prof.ManifestSHA256,
		ProfileStatus:    profile.StatusEngineeringProxy,
		SourceLabel:      prof.SourceLabel,
		TracePath:        DefaultTraceName,
		TraceSHA256:      w.SHA256,
		RequestsLoaded:   len(w.Requests),
		ServesimVersion:  "v1",
	}, report.Provenance)

	cfg.Normalize = 0
	report, err = Run(w, cfg)
	require.NoError(t, err)
	assert.Nil(t, report.Dilation)

	cfg.Normalize = 2
	_, err = Run(w, cfg)
	assert.ErrorContains(t, err, "strictly between zero and one")
}

func TestNormalizeInPlaceGivesTheSameReport(t *testing.T) {
	w, err := DefaultTrace(600)
	require.NoError(t, err)
	original := slices.Clone(w.Requests)
	cfg := Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: MaxClock{}, Normalize: 0.1}
	copied, err := Run(w, cfg)
	require.NoError(t, err)
	assert.Equal(t, original, w.Requests, "by default the workload is left as it was")

	cfg.NormalizeInPlace = true
	inPlace, err := Run(w, cfg)
	require.NoError(t, err)
	assert.Equal(t, copied, inPlace)
	assert.NotEqual(t, original, w.Requests, "in place, the arrival times were dilated")
	for i, r := range w.Requests {
		assert.Equal(t, copied.Requests[i].ArrivalTimeS, r.ArrivalTimeS)
	}
}

func TestConcurrentRunsShareInputs(t *testing.T) {
	w, err := DefaultTrace(300)
	require.NoError(t, err)
	p := NewPlant(profile.Default())
	specs := []string{"max", "reactive", "sampled-reactive:0.5", "fixed:900"}
	want := make([]*Report, len(specs))
	for i, spec := range specs {
		c, err := NewController(spec)
		require.NoError(t, err)
		want[i], err = Run(w, Config{Plant: p, Scheduler: ChunkedPrefill{}, Controller: c, Options: Options{Stride: 5}})
		require.NoError(t, err)
	}
	got := make([]*Report, len(specs))
	errs := make([]error, len(specs))
	done := make(chan int)
	for i, spec := range specs {
		go func() {
			c, _ := NewController(spec)
			got[i], errs[i] = Run(w, Config{Plant: p, Scheduler: ChunkedPrefill{}, Controller: c, Options: Options{Stride: 5}})
			done <- i
		}()
	}
	for range specs {
		<-done
	}
	for i := range specs {
		require.NoError(t, errs[i])
		assert.Equal(t, want[i], got[i], specs[i])
	}
}

func TestRunRecordsTheFixedClockLevel(t *testing.T) {
	w, err := DefaultTrace(60)
	require.NoError(t, err)
	tests := []struct {
		spec string
		want *float64
	}{
		{"fixed:1000", new(960.0)},
		{"fixed:960", new(960.0)},
		{"fixed:100", new(420.0)},
		{"max", nil},
		{"sampled-reactive", nil},
	}
	for _, tt := range tests {
		c, err := NewController(tt.spec)
		require.NoError(t, err)
		report, err := Run(w, Config{Plant: NewPlant(profile.Default()), Scheduler: ChunkedPrefill{}, Controller: c, Options: Options{Summary: true}})
		require.NoError(t, err)
		assert.Equal(t, tt.want, report.Provenance.FixedClockLevelMHz, tt.spec)
	}
}

// TestRunRemembersTheWorkloadChecksum: the runs of one read workload
// compute the checksum of each normalization once, and report the
// checksum of the requests as run; a workload built as a literal, or
// normalized in place, computes its own.
func TestRunRemembersTheWorkloadChecksum(t *testing.T) {
	w, err := DefaultTrace(600)
	require.NoError(t, err)
	proxy := profile.Default()
	for _, normalize := range []float64{0, 0.1, 0, 0.05, 0.1, 0.05} {
		cfg := Config{Plant: NewPlant(proxy), Scheduler: ChunkedPrefill{}, Controller: MaxClock{}, Normalize: normalize, Options: Options{Summary: true}}
		report, err := Run(w, cfg)
		require.NoError(t, err)
		asRun := w.Requests
		if normalize != 0 {
			asRun, _, err = NormalizeOfferedLoad(w.Requests, proxy, normalize)
			require.NoError(t, err)
		}
		assert.Equal(t, WorkloadChecksum(asRun), report.WorkloadChecksum, "normalize %v", normalize)
		// Remembered: the workload answers without the requests.
		assert.Equal(t, report.WorkloadChecksum, w.Checksum(report.Dilation, nil), "normalize %v", normalize)
	}
	literal := Workload{Requests: slices.Clone(w.Requests)}
	cfg := Config{Plant: NewPlant(proxy), Scheduler: ChunkedPrefill{}, Controller: MaxClock{}, Normalize: 0.1, NormalizeInPlace: true, Options: Options{Summary: true}}
	want, _, err := NormalizeOfferedLoad(w.Requests, proxy, 0.1)
	require.NoError(t, err)
	report, err := Run(literal, cfg)
	require.NoError(t, err)
	assert.Equal(t, WorkloadChecksum(want), report.WorkloadChecksum)
	inPlace := w.WithRequests(slices.Clone(w.Requests))
	report, err = Run(inPlace, cfg)
	require.NoError(t, err)
	assert.Equal(t, WorkloadChecksum(want), report.WorkloadChecksum)
	assert.Equal(t, WorkloadChecksum(nil), inPlace.Checksum(report.Dilation, nil), "a workload normalized in place is not remembered")
	assert.Equal(t, WorkloadChecksum(nil), inPlace.Checksum(nil, nil), "a workload normalized in place is not remembered")
}

// TestWorkloadChecksumIsRemembered: a read workload computes the checksum
// of each normalization once (asRun is trusted to be its requests as run);
// a literal one at every call.
func TestWorkloadChecksumIsRemembered(t *testing.T) {
	w, err := DefaultTrace(600)
	require.NoError(t, err)
	raw := WorkloadChecksum(w.Requests)
	other := w.Requests[1:]
	assert.Equal(t, raw, w.Checksum(nil, w.Requests))
	assert.Equal(t, raw, w.Checksum(nil, other), "remembered")
	dilation := 2.0
	assert.Equal(t, WorkloadChecksum(other), w.Checksum(&dilation, other), "another normalization")
	literal := Workload{Requests: w.Requests}
	assert.Equal(t, raw, literal.Checksum(nil, w.Requests))
	assert.Equal(t, WorkloadChecksum(other), literal.Checksum(nil, other), "computed at every call")
}
