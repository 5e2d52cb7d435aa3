package capacity

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/runparams"
)

func TestCheckOverTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		windowS float64
		err     string
	}{
		{0, ""}, // not given
		{0.5, ""},
		{3600, ""},
		{-1, "over-time -1: expected a positive finite number of seconds"},
		{math.NaN(), "over-time NaN: expected a positive finite number of seconds"},
		{math.Inf(1), "over-time +Inf: expected a positive finite number of seconds"},
	} {
		cfg := config()
		cfg.ExecTimeoutS, cfg.OverTimeS = 5, tc.windowS
		err := cfg.Check()
		if tc.err == "" {
			assert.NoError(t, err, "%v", tc.windowS)
		} else {
			assert.EqualError(t, err, tc.err)
		}
	}
}

func TestRunOverTime(t *testing.T) {
	t.Parallel()
	cfg := config()
	cfg.OverTimeS = 20
	study, err := Load(cfg)
	require.NoError(t, err)
	doc, err := study.RunOverTime(context.Background(), nil, Progress{})
	require.NoError(t, err)
	require.Len(t, doc.Plan.Windows, 3, "60 s of arrivals in 20 s windows")
	static, err := study.Run(context.Background(), nil, Progress{})
	require.NoError(t, err)
	assert.Equal(t, static.Report, doc.Static, "the static study is capacity's own")
	assert.Equal(t, static.Provenance, doc.Provenance)
	require.NotNil(t, doc.StaticReplicaHours)
	assert.InDelta(t, float64(*static.Replicas)*60/3600, *doc.StaticReplicaHours, 1e-12)
	assert.InDelta(t, doc.Plan.ReplicaHours / *doc.StaticReplicaHours, *doc.PlanToStaticReplicaHours, 1e-12)

	cfg.OverTimeS = 1e-4
	study, err = Load(cfg)
	require.NoError(t, err)
	_, err = study.RunOverTime(context.Background(), nil, Progress{})
	var late *runparams.LateUsageError
	require.ErrorAs(t, err, &late, "too many windows: a usage error once the trace is read")
	var count *WindowCountError
	assert.ErrorAs(t, err, &count)
}
