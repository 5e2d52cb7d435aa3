package diagnose

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWindower(t *testing.T) {
	w, err := NewWindower(10)
	require.NoError(t, err)
	logs := steady(5, 10, 40)
	logs[4].QueueWaitMs = 900
	for i, at := range []float64{-3, 0, 9.999, 25, 29} {
		require.NoError(t, w.Add(Record{Log: logs[i], ArrivalS: at, Arrival: ArrivalSeconds}))
	}
	report, err := w.Report("api", DefaultOptions())
	require.NoError(t, err)
	var names []string
	var counts []int
	for _, s := range report.Windows {
		names = append(names, s.WindowName)
		counts = append(counts, s.RequestCount)
	}
	assert.Equal(t, []string{"api [-10s, 0s)", "api [0s, 10s)", "api [20s, 30s)"}, names)
	assert.Equal(t, []int{1, 2, 2}, counts)
	assert.Equal(t, "api [20s, 30s)", report.WorstWindow)

	err = w.Add(Record{Log: logs[0], ArrivalS: 1.7e9, Arrival: ArrivalTimestamp})
	assert.ErrorContains(t, err, "arrival_s and timestamp cannot be mixed")
	assert.Error(t, w.Add(Record{Log: logs[0]}), "a record without arrival time")

	tenths, err := NewWindower(0.1)
	require.NoError(t, err)
	require.NoError(t, tenths.Add(Record{Log: logs[0], ArrivalS: 0.35, Arrival: ArrivalSeconds}))
	report, err = tenths.Report("x", DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, "x [0.3s, 0.4s)", report.WorstWindow)

	_, err = NewWindower(0)
	assert.Error(t, err)
	empty, err := NewWindower(1)
	require.NoError(t, err)
	_, err = empty.Report("x", DefaultOptions())
	assert.ErrorIs(t, err, ErrNoLogs)
}

func TestWorstWindowTieIsEarliest(t *testing.T) {
	w, err := NewWindower(60)
	require.NoError(t, err)
	for i, r := range steady(4, 10, 40) {
		require.NoError(t, w.Add(Record{Log: r, ArrivalS: 1700158620 + float64(i)*60, Arrival: ArrivalTimestamp}))
	}
	report, err := w.Report("t", DefaultOptions())
	require.NoError(t, err)
	require.Len(t, report.Windows, 4)
	assert.Equal(t, "t [2023-11-16T18:17:00Z, 2023-11-16T18:18:00Z)", report.WorstWindow)
}

// TestReadersRoundTripTheDemoWorkload writes the seed's workload as CSV and
// as JSON Lines and checks that reading it back gives the same snapshot.
func TestReadersRoundTripTheDemoWorkload(t *testing.T) {
	logs := SimulateWorkloadLogs(98.5, false)
	want, err := Diagnose("demo", logs, DefaultOptions())
	require.NoError(t, err)
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	var csvText, jsonText strings.Builder
	csvText.WriteString(csvHeader)
	for _, r := range logs {
		fmt.Fprintf(&csvText, "%s,%d,%d,%s,%s,%s,%t,%s,%d,%s\n", r.RequestID, r.PromptTokens, r.OutputTokens,
			g(r.QueueWaitMs), g(r.PrefillMs), g(r.DecodeTPOTMs), r.Preempted, g(r.RecomputePenaltyMs), r.PrefixCachedTokens, g(r.KVOccupancyPctAtArrival))
		fmt.Fprintf(&jsonText, `{"request_id":%q,"prompt_tokens":%d,"output_tokens":%d,"queue_wait_ms":%s,"prefill_ms":%s,"decode_tpot_ms":%s,"preempted":%t,"recompute_penalty_ms":%s,"prefix_cached_tokens":%d,"kv_occupancy_pct_at_arrival":%s}`+"\n",
			r.RequestID, r.PromptTokens, r.OutputTokens, g(r.QueueWaitMs), g(r.PrefillMs), g(r.DecodeTPOTMs), r.Preempted, g(r.RecomputePenaltyMs), r.PrefixCachedTokens, g(r.KVOccupancyPctAtArrival))
	}
	for _, text := range []string{csvText.String(), jsonText.String()} {
		recs, _, err := collect(t, text, ReadOptions{})
		require.NoError(t, err)
		read := make([]RequestLog, len(recs))
		for i, r := range recs {
			read[i] = r.Log
		}
		assert.Equal(t, logs, read)
		got, err := Diagnose("demo", read, DefaultOptions())
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
