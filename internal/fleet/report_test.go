package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

func TestRunReport(t *testing.T) {
	w, err := plant.DefaultTrace(600)
	require.NoError(t, err)
	strict := *profile.Default()
	strict.BaselineTTFTS /= 2
	cfg := RunConfig{
		Config: Config{Plant: plant.NewPlant(profile.Default()), Groups: []Group{
			{Name: "a", Replicas: 2, Profile: profile.Default(), ProfilePath: "(embedded)", Scheduler: "chunked", Controller: "max"},
			{Name: "b", Replicas: 1, Profile: &strict, ProfilePath: "strict.csv", Scheduler: "static", Controller: "reactive"},
		}, Options: plant.Options{Stride: 1}},
		ProfilePath: "(embedded)",
		Version:     "test",
	}
	r, err := Run(w, cfg)
	require.NoError(t, err)
	assert.Equal(t, r.Result.Metrics, r.Metrics)
	assert.Equal(t, Info{Router: "round-robin", Replicas: 3, RequestsRouted: []int{
		r.Replicas[0].RequestsRouted, r.Replicas[1].RequestsRouted, r.Replicas[2].RequestsRouted,
	}, Groups: []GroupInfo{
		{Name: "a", Replicas: 2, ProfilePath: "(embedded)", ProfileCSVSHA256: profile.Default().ProfileCSVSHA256, ProfileStatus: profile.Default().Status, Scheduler: "chunked", Controller: "max"},
		{Name: "b", Replicas: 1, ProfilePath: "strict.csv", ProfileCSVSHA256: strict.ProfileCSVSHA256, ProfileStatus: strict.Status, Scheduler: "static", Controller: "reactive"},
	}}, r.Fleet)
	assert.Equal(t, []string{"a", "a", "b"}, []string{r.Replicas[0].Group, r.Replicas[1].Group, r.Replicas[2].Group})
	assert.Equal(t, "maximum_clock_controller+reactive_clock_controller", r.Summary.Controller)
	assert.Equal(t, "chunked_prefill_scheduler+static_batch_scheduler", r.Summary.Scheduler)
	assert.Equal(t, plant.WorkloadChecksum(w.Requests), r.Summary.WorkloadChecksum)
	assert.Nil(t, r.Dilation)
	assert.Equal(t, "test", r.Provenance.ServesimVersion)
	assert.Equal(t, len(w.Requests), r.Provenance.RequestsLoaded)
	require.Len(t, r.Requests, len(w.Requests))
	for i, rec := range r.Requests {
		assert.Equal(t, r.Result.Assignment[i], rec.Replica)
		assert.Equal(t, w.Requests[i].ID, rec.RequestID)
	}
	full := r.Replicas[2].Trajectory
	require.Positive(t, full.Len())

	r.Thin(10, false)
	assert.Equal(t, full.Resample(10), r.Replicas[2].Trajectory)
	assert.NotNil(t, r.Requests)
	r.Thin(10, true)
	assert.Zero(t, r.Replicas[2].Len())
	assert.Nil(t, r.Requests)
}

func TestRunNormalizesToTheFleetsCapacity(t *testing.T) {
	w, err := plant.DefaultTrace(600)
	require.NoError(t, err)
	prof := profile.Default()
	_, single, err := plant.NormalizeOfferedLoad(w.Requests, prof, 0.02)
	require.NoError(t, err)
	require.Greater(t, single, 4.0, "the test needs a trace that one GPU cannot serve at 0.02")
	cfg := RunConfig{Config: Config{Plant: plant.NewPlant(nil), Groups: []Group{
		{Replicas: 4, Profile: prof, Scheduler: "chunked", Controller: "max"},
	}, Options: plant.Options{Summary: true}}, Normalize: 0.02}
	last := w.Requests[len(w.Requests)-1].ArrivalTimeS
	r, err := Run(w, cfg)
	require.NoError(t, err)
	require.NotNil(t, r.Dilation)
	assert.InDelta(t, single/4, *r.Dilation, 1e-12*single)
	assert.Equal(t, last, w.Requests[len(w.Requests)-1].ArrivalTimeS, "the workload is copied")

	other := *prof
	cfg.Groups = append(cfg.Groups, Group{Replicas: 1, Profile: &other, Scheduler: "chunked", Controller: "max"})
	_, err = Run(w, cfg)
	assert.EqualError(t, err, "normalize needs a fleet of one profile")
}
