package reqlog

import (
	"bytes"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/diagnose"
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/testsupport"
)

func TestFormatOf(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Format
		ok   bool
	}{
		{"run.csv", CSV, true},
		{"dir/RUN.CSV", CSV, true},
		{"run.jsonl", JSONLines, true},
		{"run.JSONL", JSONLines, true},
		{"run.json", 0, false},
		{"run.csv.gz", 0, false},
		{"run", 0, false},
		{"csv", 0, false},
	} {
		got, err := FormatOf(tc.path)
		if !tc.ok {
			assert.ErrorContains(t, err, ".csv or .jsonl", tc.path)
			continue
		}
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, got, tc.path)
	}
}

// handLog is a hand-made log: a plain request, one whose arrival falls a
// hair after its step's start, one found above the KV capacity, one with a
// single output token, and an unfinished one.
func handLog() *plant.RequestLog {
	nan := math.NaN()
	return &plant.RequestLog{
		Records: []plant.RequestRecord{
			{RequestID: 0, ArrivalTimeS: 0.5, PrefillStartS: 0.75, FirstTokenTimeS: 1.25, CompletionTimeS: 3.25, PromptTokens: 100, OutputTokens: 5},
			{RequestID: 1, ArrivalTimeS: 1 + 1e-13, PrefillStartS: 1, FirstTokenTimeS: 1.5, CompletionTimeS: 1.75, PromptTokens: 7, OutputTokens: 2},
			{RequestID: 2, ArrivalTimeS: 2, PrefillStartS: 2, FirstTokenTimeS: 2.5, CompletionTimeS: 2.75, PromptTokens: 3, OutputTokens: 1},
			{RequestID: 5, ArrivalTimeS: 3, PrefillStartS: 3.5, FirstTokenTimeS: nan, CompletionTimeS: nan, PromptTokens: 40, OutputTokens: 9},
		},
		ArrivalKVTokens:  []float64{0, 65536, 140000, 1000},
		KVCapacityTokens: 131072,
	}
}

func TestRowsFollowTheDefinitions(t *testing.T) {
	log, err := FromPlant(handLog())
	require.NoError(t, err)
	assert.Equal(t, 3, log.Completed)
	assert.Equal(t, 1, log.Unfinished)
	var rows []Row
	for r := range log.rows {
		rows = append(rows, r)
	}
	late := 1 + 1e-13 // a float64: the differences below round as at run time
	want := []Row{
		// Queue 0.25 s, prefill 0.5 s, 2 s over 4 tokens after the first.
		{RequestID: 0, PromptTokens: 100, OutputTokens: 5, QueueWaitMs: 250, PrefillMs: 500, DecodeTPOTMs: 500,
			KVOccupancyPct: 0, ArrivalS: 0.5, TTFTMs: 750, E2EMs: 2750},
		// Admitted in the step starting 1e-13 s before its arrival: no
		// negative wait.
		{RequestID: 1, PromptTokens: 7, OutputTokens: 2, QueueWaitMs: 0, PrefillMs: 500, DecodeTPOTMs: 250,
			KVOccupancyPct: 50, ArrivalS: late, TTFTMs: (1.5 - late) * 1000, E2EMs: (1.75 - late) * 1000},
		// A single output token: TPOT is completion - first token.
		{RequestID: 2, PromptTokens: 3, OutputTokens: 1, QueueWaitMs: 0, PrefillMs: 500, DecodeTPOTMs: 250,
			KVOccupancyPct: 100, ArrivalS: 2, TTFTMs: 500, E2EMs: 750},
	}
	assert.Equal(t, want, rows)
}

func TestWriteGolden(t *testing.T) {
	log, err := FromPlant(handLog())
	require.NoError(t, err)
	for _, f := range []struct {
		format Format
		name   string
	}{{CSV, "hand.csv"}, {JSONLines, "hand.jsonl"}} {
		var buf bytes.Buffer
		require.NoError(t, log.Write(&buf, f.format))
		testsupport.CheckGolden(t, filepath.Join("testdata", f.name), buf.Bytes())
	}
}

func TestAppendNumber(t *testing.T) {
	for _, x := range []float64{0, 1, 0.1, 250, 199.99999999999997, 1e-6, 9.99e-7, 1234567.125, 1e20, 1e21, 100} {
		got := string(appendNumber(nil, x))
		back, err := strconv.ParseFloat(got, 64)
		require.NoError(t, err, got)
		assert.Equal(t, x, back, got)
	}
	assert.Equal(t, "1234567.125", string(appendNumber(nil, 1234567.125)))
	assert.Equal(t, "9.99e-07", string(appendNumber(nil, 9.99e-7)))
	assert.Equal(t, "100", string(appendNumber(nil, 100)))
}

// loadedWorkload is the embedded trace's first ten minutes squeezed into
// two and a half, so that requests queue and find the KV cache in use.
func loadedWorkload(t *testing.T) []plant.Request {
	t.Helper()
	w, err := plant.DefaultTrace(600)
	require.NoError(t, err)
	for i := range w.Requests {
		w.Requests[i].ArrivalTimeS /= 4
	}
	return w.Requests
}

// readBack reads a log with diagnose's reader, arrival times included.
func readBack(t *testing.T, data []byte, name string) []diagnose.Record {
	t.Helper()
	var got []diagnose.Record
	kind, err := diagnose.Scan(bytes.NewReader(data), name, diagnose.ReadOptions{Arrival: true}, func(r diagnose.Record) error {
		got = append(got, r)
		return nil
	})
	require.NoError(t, err, name)
	require.Equal(t, diagnose.ArrivalSeconds, kind)
	return got
}

func TestDiagnoseReadsThePlantsLog(t *testing.T) {
	requests := loadedWorkload(t)
	p := plant.NewPlant(profile.Default())
	p.MaxSimulationTimeS = 120 // some requests stay unfinished
	res, err := plant.Simulate(requests, p, plant.ChunkedPrefill{}, plant.Reactive{}, plant.Options{Summary: true, RequestLog: true})
	require.NoError(t, err)
	log, err := FromPlant(res.Log)
	require.NoError(t, err)
	require.Positive(t, log.Unfinished)
	require.Equal(t, len(requests), log.Completed+log.Unfinished)
	for _, f := range []Format{CSV, JSONLines} {
		var buf bytes.Buffer
		require.NoError(t, log.Write(&buf, f))
		got := readBack(t, buf.Bytes(), "log")
		require.Len(t, got, log.Completed)
		j := 0
		busy := 0
		for i := range res.Log.Records {
			r := &res.Log.Records[i]
			if !r.Completed() {
				continue
			}
			g := got[j].Log
			j++
			require.Equal(t, strconv.Itoa(r.RequestID), g.RequestID)
			assert.EqualValues(t, r.PromptTokens, g.PromptTokens)
			assert.EqualValues(t, r.OutputTokens, g.OutputTokens)
			assert.Equal(t, max(0, (r.PrefillStartS-r.ArrivalTimeS)*1000), g.QueueWaitMs)
			assert.Equal(t, (r.FirstTokenTimeS-r.PrefillStartS)*1000, g.PrefillMs)
			assert.Equal(t, r.TPOTS()*1000, g.DecodeTPOTMs)
			assert.False(t, g.Preempted)
			assert.Zero(t, g.RecomputePenaltyMs)
			assert.Zero(t, g.PrefixCachedTokens)
			assert.Equal(t, 100*res.Log.ArrivalKVTokens[i]/p.KVCapacityTokens, g.KVOccupancyPctAtArrival)
			assert.Equal(t, r.ArrivalTimeS, got[j-1].ArrivalS)
			// diagnose's TTFT is queue wait + prefill: ours up to rounding.
			assert.InDelta(t, r.TTFTS()*1000, g.TTFTMs(), 1e-9)
			if g.KVOccupancyPctAtArrival > 0 {
				busy++
			}
		}
		assert.Greater(t, busy, log.Completed/2)
	}
}

func TestFleetLogFollowsTheWorkloadWithReplicas(t *testing.T) {
	requests := loadedWorkload(t)
	prof := profile.Default()
	for _, router := range []string{fleet.RoundRobinName, "least-tokens"} {
		r, err := fleet.NewRouter(router, fleet.DefaultRouterSeed)
		require.NoError(t, err)
		res, err := fleet.Simulate(requests, fleet.Config{
			Plant:   plant.NewPlant(prof),
			Groups:  []fleet.Group{{Replicas: 3, Profile: prof, Scheduler: "chunked", Controller: "reactive"}},
			Router:  r,
			Options: plant.Options{Summary: true, RequestLog: true},
		})
		require.NoError(t, err)
		log, err := FromFleet(res)
		require.NoError(t, err)
		require.True(t, log.Fleet)
		require.Equal(t, len(requests), log.Completed)
		var buf bytes.Buffer
		require.NoError(t, log.Write(&buf, CSV))
		header, _, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
		assert.Equal(t, "request_id,prompt_tokens,output_tokens,queue_wait_ms,prefill_ms,decode_tpot_ms,preempted,"+
			"recompute_penalty_ms,prefix_cached_tokens,kv_occupancy_pct_at_arrival,arrival_s,ttft_ms,e2e_ms,replica", string(header))
		got := readBack(t, buf.Bytes(), "fleet.csv")
		require.Len(t, got, len(requests))
		var rows []Row
		for row := range log.rows {
			rows = append(rows, row)
		}
		seen := make([]int, 3)
		for i, rec := range res.Requests {
			k := res.Assignment[i]
			l := res.Replicas[k].Result.Log
			assert.Equal(t, strconv.Itoa(rec.RequestID), got[i].Log.RequestID, router)
			assert.Equal(t, k, rows[i].Replica, router)
			assert.Equal(t, rec.ArrivalTimeS, rows[i].ArrivalS, router)
			assert.Equal(t, min(100, 100*l.ArrivalKVTokens[seen[k]]/l.KVCapacityTokens), rows[i].KVOccupancyPct, router)
			seen[k]++
		}
	}
}

func TestALogNeedsARunThatKeptOne(t *testing.T) {
	_, err := FromPlant(nil)
	assert.ErrorContains(t, err, "RequestLog")
	res, err := fleet.Simulate(loadedWorkload(t)[:20], fleet.Config{
		Plant:  plant.NewPlant(profile.Default()),
		Groups: []fleet.Group{{Replicas: 2, Profile: profile.Default(), Scheduler: "chunked", Controller: "max"}},
	})
	require.NoError(t, err)
	_, err = FromFleet(res)
	assert.ErrorContains(t, err, "RequestLog")
}

func TestEngineRecordsFillTheirColumns(t *testing.T) {
	l := handLog()
	l.Engine = []plant.EngineRecord{
		// Preempted after its first token: 0.5 s of its 2 s of decoding
		// were recomputation.
		{Preemptions: 2, RecomputedTokens: 700, RecomputeS: 0.75, RecomputeAfterFirstTokenS: 0.5, PrefixCachedTokens: 64},
		// Preempted before its first token: the recomputation is prefill.
		{Preemptions: 1, RecomputedTokens: 7, RecomputeS: 0.25, PrefixCachedTokens: 3.5},
		{},
		{PrefixCachedTokens: 16},
	}
	log, err := FromPlant(l)
	require.NoError(t, err)
	var rows []Row
	for r := range log.rows {
		rows = append(rows, r)
	}
	require.Len(t, rows, 3)
	assert.True(t, rows[0].Preempted)
	assert.Equal(t, 500.0, rows[0].RecomputePenaltyMs)
	assert.Equal(t, int64(64), rows[0].PrefixCachedTokens)
	assert.Equal(t, 375.0, rows[0].DecodeTPOTMs, "(2000 - 500) ms over 4 tokens")
	assert.True(t, rows[1].Preempted)
	assert.Zero(t, rows[1].RecomputePenaltyMs)
	assert.Equal(t, int64(3), rows[1].PrefixCachedTokens, "rounded down")
	assert.Equal(t, 250.0, rows[1].DecodeTPOTMs)
	assert.False(t, rows[2].Preempted)

	var buf bytes.Buffer
	require.NoError(t, log.Write(&buf, CSV))
	assert.Contains(t, buf.String(), "\n0,100,5,250,500,375,true,500,64,0,0.5,750,2750\n")
	got := readBack(t, buf.Bytes(), "log.csv")
	// diagnose's end-to-end latency adds the penalty back.
	assert.Equal(t, 2750.0, got[0].Log.E2EMs())
}

// TestDiagnoseReadsAKVStarvedLog: a run that preempts writes preempted
// rows whose diagnose latencies are the run's, and prefix-cache hits.
func TestDiagnoseReadsAKVStarvedLog(t *testing.T) {
	requests := make([]plant.Request, 60)
	for i := range requests {
		requests[i] = plant.Request{ID: i, ArrivalTimeS: float64(i) * 0.5, PromptTokens: 500 + 37*i%1000, OutputTokens: 500 + 71*i%1500}
	}
	p := plant.NewPlant(profile.Default())
	p.KVCapacityTokens = 16384
	p.DecodeKVReserveTokensPerActive = 64
	eo := plant.EngineOptions{PrefixCache: true, SharedPrefixTokens: 256, Preemption: plant.PreemptionRecompute}
	res, err := plant.Simulate(requests, p, plant.ChunkedPrefill{}, plant.MaxClock{}, plant.Options{Summary: true, RequestLog: true, Engine: eo})
	require.NoError(t, err)
	log, err := FromPlant(res.Log)
	require.NoError(t, err)
	require.Equal(t, len(requests), log.Completed)
	var buf bytes.Buffer
	require.NoError(t, log.Write(&buf, JSONLines))
	got := readBack(t, buf.Bytes(), "log.jsonl")
	preempted, cached, penalty := 0, int64(0), 0.0
	for i, g := range got {
		r := &res.Log.Records[i]
		e := &res.Log.Engine[i]
		assert.Equal(t, e.Preemptions > 0, g.Log.Preempted)
		assert.InDelta(t, r.LatencyS()*1000, g.Log.E2EMs(), 1e-6, "request %d: diagnose's e2e is the run's", i)
		assert.LessOrEqual(t, g.Log.KVOccupancyPctAtArrival, 100.0)
		if g.Log.Preempted {
			preempted++
		}
		cached += g.Log.PrefixCachedTokens
		penalty += g.Log.RecomputePenaltyMs
	}
	assert.Equal(t, res.Engine.PreemptedRequests, preempted)
	assert.Positive(t, preempted)
	assert.Positive(t, penalty)
	assert.InDelta(t, res.Engine.PrefixCachedTokens, float64(cached), float64(len(got)), "whole tokens")
	assert.Positive(t, cached)
	assert.Equal(t, 16384.0, res.Log.KVCapacityTokens)
}
