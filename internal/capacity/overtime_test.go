package capacity

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/profile"
)

// arrivingAt are requests arriving at the given times, IDs from 0.
func arrivingAt(times ...float64) []plant.Request {
	requests := make([]plant.Request, len(times))
	for i, t := range times {
		requests[i] = plant.Request{ID: i, ArrivalTimeS: t, PromptTokens: 100, OutputTokens: 10}
	}
	return requests
}

func TestSplitWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		times   []float64
		windowS float64
		want    []TraceWindow
	}{
		{"one request", []float64{0}, 60, []TraceWindow{{0, 60, 0, 1}}},
		{"a window longer than the trace", []float64{0, 10, 59.9}, 3600, []TraceWindow{{0, 3600, 0, 3}}},
		{"a request at a boundary opens the next window", []float64{0, 60}, 60,
			[]TraceWindow{{0, 60, 0, 1}, {60, 120, 1, 2}}},
		{"empty windows between", []float64{0, 1, 250}, 60,
			[]TraceWindow{{0, 60, 0, 2}, {60, 120, 2, 2}, {120, 180, 2, 2}, {180, 240, 2, 2}, {240, 300, 2, 3}}},
		{"fractional windows", []float64{0, 0.25, 0.5, 0.75, 1}, 0.5,
			[]TraceWindow{{0, 0.5, 0, 2}, {0.5, 1, 2, 4}, {1, 1.5, 4, 5}}},
		{"0.1 s windows: k x 0.1, not a sum", []float64{0, 0.3, 0.30000000000000004}, 0.1,
			[]TraceWindow{{0, 0.1, 0, 1}, {0.1, 0.2, 1, 1}, {0.2, 0.30000000000000004, 1, 2}, {0.30000000000000004, 0.4, 2, 3}}},
		{"no request", nil, 60, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitWindows(arrivingAt(tc.times...), tc.windowS)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			for _, w := range got {
				for _, r := range arrivingAt(tc.times...)[w.First:w.Last] {
					assert.True(t, r.ArrivalTimeS >= w.StartS && r.ArrivalTimeS < w.EndS, "%v in [%v, %v)", r.ArrivalTimeS, w.StartS, w.EndS)
				}
			}
		})
	}
}

func TestSplitWindowsRefuses(t *testing.T) {
	for _, windowS := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := SplitWindows(arrivingAt(0, 1), windowS)
		assert.ErrorContains(t, err, "expected a positive finite number of seconds", "%v", windowS)
	}
	_, err := SplitWindows(arrivingAt(0, 3600), 0.01)
	var count *WindowCountError
	require.ErrorAs(t, err, &count)
	assert.Equal(t, 360001, count.Windows)
	assert.Equal(t, "0.01 s windows: the trace's 3600 s from its first to its last arrival make 360001 windows, more than 100000", err.Error())
	_, err = SplitWindows(arrivingAt(0, 1e300), 1e-300)
	require.ErrorAs(t, err, &count)
	assert.Greater(t, count.Windows, MaxWindows, "capped, never overflowing")
}

// planOf runs the proxy study over time on requests and fails the test on
// an error.
func planOf(t *testing.T, requests []plant.Request, study Capacity, windowS float64, jobs int) *Plan {
	t.Helper()
	plan, err := RunOverTime(context.Background(), requests, study, windowS, jobs, nil)
	require.NoError(t, err)
	return plan
}

func TestRunOverTimeSearchesEachWindowAlone(t *testing.T) {
	requests := firstMinutes(t)
	study := proxyStudy(0.9, "max", "reactive")
	plan := planOf(t, requests, study, 100, 2)
	windows, err := SplitWindows(requests, 100)
	require.NoError(t, err)
	require.Len(t, plan.Windows, len(windows))
	hours := 0.0
	for k, w := range windows {
		row := plan.Windows[k]
		assert.Equal(t, PlanWindow{Window: k, StartS: w.StartS, EndS: w.EndS, Requests: w.Requests()},
			PlanWindow{Window: row.Window, StartS: row.StartS, EndS: row.EndS, Requests: row.Requests})
		// The window's requests alone, re-timed to start at 0, searched as
		// Run searches them, with the first controller only.
		alone := make([]plant.Request, 0, w.Requests())
		for _, r := range requests[w.First:w.Last] {
			r.ArrivalTimeS -= w.StartS
			alone = append(alone, r)
		}
		one := study
		one.Controllers = []string{"max"}
		report, err := Run(context.Background(), alone, one)
		require.NoError(t, err)
		answer, ok := report.Answer()
		require.True(t, ok)
		assert.Equal(t, *report.Replicas, row.Replicas, "window %d", k)
		assert.True(t, row.MeetsTarget)
		assert.Equal(t, answer.Attainment, row.Attainment)
		assert.Equal(t, answer.P99TTFTS, row.P99TTFTS)
		assert.Equal(t, answer.EnergyKWh, row.EnergyKWh)
		assert.Equal(t, len(report.Evaluations), row.Simulations)
		hours += float64(row.Replicas) * 100 / 3600
	}
	assert.InDelta(t, hours, plan.ReplicaHours, 1e-12)
	assert.Greater(t, plan.PeakReplicas, 1, "the bursty trace needs more than one GPU somewhere")
}

func TestRunOverTimeDoesNotDependOnJobs(t *testing.T) {
	requests := firstMinutes(t)
	for _, router := range []string{fleet.RoundRobinName, "least-outstanding"} {
		study := proxyStudy(0.95, "max")
		study.Router = router
		want := fmt.Sprintf("%+v", planOf(t, requests, study, 60, 1))
		for _, jobs := range []int{2, 3, 8} {
			assert.Equal(t, want, fmt.Sprintf("%+v", planOf(t, requests, study, 60, jobs)), "%s, %d jobs", router, jobs)
		}
	}
}

func TestRunOverTimeEmptyAndUnreachableWindows(t *testing.T) {
	requests := arrivingAt(0, 1, 2, 130, 131)
	study := proxyStudy(0.9, "max")
	plan := planOf(t, requests, study, 60, 2)
	require.Len(t, plan.Windows, 3)
	assert.Equal(t, 1, plan.Windows[0].Replicas)
	empty := plan.Windows[1]
	assert.Equal(t, 0, empty.Replicas, "a window without requests needs no replica")
	assert.True(t, empty.MeetsTarget)
	assert.True(t, math.IsNaN(empty.Attainment))
	assert.Zero(t, empty.Simulations)
	assert.Equal(t, 1, plan.PeakReplicas)
	assert.InDelta(t, 2.0/60, plan.ReplicaHours, 1e-12)

	// A TTFT objective below any prefill: no size serves a window.
	study.SLO.TTFTSeconds = 1e-4
	study.Search.MaxReplicas = 4
	plan, err := RunOverTime(context.Background(), requests, study, 60, 2, nil)
	var unreachable *UnreachableWindowsError
	require.ErrorAs(t, err, &unreachable)
	assert.Equal(t, UnreachableWindowsError{Windows: 2, Of: 3, Target: 0.9, MaxReplicas: 4}, *unreachable)
	assert.Equal(t, "2 of 3 windows reach attainment 0.9 with no fleet of at most 4 replicas: the plan holds the size of their best attainment (meets_target false)", err.Error())
	require.NotNil(t, plan)
	assert.False(t, plan.Windows[0].MeetsTarget)
	assert.Equal(t, 1, plan.Windows[0].Replicas, "the best attainment (0) is the smallest size's")
	assert.Equal(t, 2, plan.UnreachableWindows)
}

func TestRunOverTimeErrors(t *testing.T) {
	study := proxyStudy(0.9, "max")
	_, err := RunOverTime(context.Background(), arrivingAt(0, 1), study, 0, 1, nil)
	assert.ErrorContains(t, err, "window 0 s")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = RunOverTime(ctx, firstMinutes(t), study, 60, 2, nil)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	study.Router = "nearest"
	_, err = RunOverTime(context.Background(), arrivingAt(0, 1), study, 60, 1, nil)
	assert.ErrorContains(t, err, "window 0 [0, 60) s: ")
}

// readSchedule parses a schedule file as the autoscaler reads it: the
// header, then rows of a start (0 first, strictly increasing) and a whole
// replica count.
func readSchedule(data []byte) (starts []float64, replicas []int, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			if sc.Text() != PlanScheduleHeader {
				return nil, nil, fmt.Errorf("line 1: header %q", sc.Text())
			}
			continue
		}
		start, count, ok := strings.Cut(sc.Text(), ",")
		if !ok {
			return nil, nil, fmt.Errorf("line %d: two fields expected", line)
		}
		s, err := strconv.ParseFloat(start, 64)
		if err != nil || math.IsNaN(s) || math.IsInf(s, 0) || strings.ContainsAny(start, "eE") {
			return nil, nil, fmt.Errorf("line %d: start_s %q", line, start)
		}
		if len(starts) == 0 && s != 0 || len(starts) > 0 && s <= starts[len(starts)-1] {
			return nil, nil, fmt.Errorf("line %d: start_s %v out of order", line, s)
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("line %d: replicas %q", line, count)
		}
		starts, replicas = append(starts, s), append(replicas, n)
	}
	if line == 0 {
		return nil, nil, errors.New("empty")
	}
	return starts, replicas, nil
}

func TestScheduleCSVRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		plan     Plan
		want     string
		replicas []int
	}{
		{"hours", Plan{replicasPerSize: 1, Windows: []PlanWindow{{StartS: 0, Replicas: 3}, {StartS: 3600, Replicas: 0}, {StartS: 1e6, Replicas: 12}}},
			"start_s,replicas\n0,3\n3600,0\n1000000,12\n", []int{3, 0, 12}},
		{"tenths, a fleet file of 3 replicas a size", Plan{replicasPerSize: 3, Windows: []PlanWindow{{StartS: 0, Replicas: 1}, {StartS: 0.1, Replicas: 2}, {StartS: 0.30000000000000004, Replicas: 5}}},
			"start_s,replicas\n0,3\n0.1,6\n0.30000000000000004,15\n", []int{3, 6, 15}},
		{"no window", Plan{replicasPerSize: 1}, "start_s,replicas\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.plan.ScheduleCSV()
			assert.Equal(t, tc.want, string(data))
			starts, replicas, err := readSchedule(data)
			require.NoError(t, err)
			assert.Equal(t, tc.replicas, replicas)
			for i, w := range tc.plan.Windows {
				assert.Equal(t, w.StartS, starts[i], "the start reads back exactly")
			}
		})
	}
}

func TestScheduleCSVOfARealPlan(t *testing.T) {
	requests := firstMinutes(t)
	plan := planOf(t, requests, proxyStudy(0.9, "max"), 0.7, 2)
	starts, replicas, err := readSchedule(plan.ScheduleCSV())
	require.NoError(t, err)
	require.Len(t, starts, len(plan.Windows))
	for i, w := range plan.Windows {
		assert.Equal(t, w.StartS, starts[i])
		assert.Equal(t, w.Replicas, replicas[i])
	}
}

// TestStreamedEvaluationIsTheRecordsOne checks that a capacity evaluation
// of a fleet run streamed from memory, without request records, is that of
// the same fleet run with them, bit for bit, for state-free and lock-step
// routers and the prefix cache.
func TestStreamedEvaluationIsTheRecordsOne(t *testing.T) {
	requests := firstMinutes(t)
	for _, tc := range []struct {
		router string
		engine plant.EngineOptions
		slo    plant.SLO
	}{
		{fleet.RoundRobinName, plant.EngineOptions{}, plant.SLO{TTFTSeconds: 5}},
		{"least-outstanding", plant.EngineOptions{}, plant.SLO{}},
		{"least-tokens", plant.EngineOptions{}, plant.SLO{TTFTSeconds: 2, E2ESeconds: 30}},
		{fleet.RoundRobinName, plant.EngineOptions{PrefixCache: true}, plant.SLO{TTFTSeconds: 5}},
	} {
		study := proxyStudy(0.9, "max")
		study.Router, study.Engine, study.SLO = tc.router, tc.engine, tc.slo
		run, err := study.prepare(requests)
		require.NoError(t, err)
		require.True(t, run.streamed)
		for _, size := range []int{1, 2, 5} {
			streamed, err := run.evaluate(context.Background(), size, "reactive")
			require.NoError(t, err)
			run.streamed = false
			kept, err := run.evaluate(context.Background(), size, "reactive")
			run.streamed = true
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("%#v", kept), fmt.Sprintf("%#v", streamed), "%s, %d replicas", tc.router, size)
		}
	}
	clairvoyant := proxyStudy(0.9, "mpc-clairvoyant")
	assert.False(t, clairvoyant.streamable(), "mpc-clairvoyant needs the whole workload")
	strict := *profile.Default()
	batched := proxyStudy(0.9, "max")
	batched.Unit[0].Profile = &strict
	assert.True(t, batched.streamable())
}
