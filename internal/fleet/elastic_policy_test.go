package fleet

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// burst is n requests over the first spanS seconds, then one at quietS.
func burst(n int, spanS, quietS float64) []plant.Request {
	var rs []plant.Request
	for i := range n {
		rs = append(rs, plant.Request{ID: i, ArrivalTimeS: spanS * float64(i) / float64(n), PromptTokens: 400 + 13*(i%17), OutputTokens: 60 + i%40})
	}
	return append(rs, plant.Request{ID: n, ArrivalTimeS: quietS, PromptTokens: 100, OutputTokens: 10})
}

// runElasticFleet simulates requests on cfg with every step kept.
func runElasticFleet(t *testing.T, requests []plant.Request, cfg Config) *Result {
	t.Helper()
	cfg.Router = LeastOutstanding{}
	cfg.Plant.MaxSimulationTimeS = 7200
	res, err := Simulate(requests, cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Scaling)
	return res
}

// checkLifecycles checks what holds of every elastic run: no request is
// routed to a replica before it is ready or after it drained (unless it
// returned to service), and the billed time is the time the series
// counts replicas up (provisioning, loading, ready or draining).
func checkLifecycles(t *testing.T, res *Result, dt float64) {
	t.Helper()
	s := res.Scaling
	byReplica := map[int]Lifecycle{}
	billed := 0.0
	for _, l := range s.Lifecycles {
		billed += l.BilledS
		if l.Replica >= 0 {
			byReplica[l.Replica] = l
		} else {
			assert.Zero(t, l.Requests)
		}
	}
	for i, rec := range res.Requests {
		k := res.Assignment[i]
		if k < 0 {
			assert.False(t, rec.Completed())
			continue
		}
		l := byReplica[k]
		if rec.Completed() {
			assert.GreaterOrEqual(t, rec.PrefillStartS, l.ReadyS-1e-9, "request %d on replica %d", i, k)
		}
		if l.ReturnedTo == 0 && !math.IsNaN(l.DrainingS) {
			assert.LessOrEqual(t, rec.ArrivalTimeS, l.DrainingS+dt, "request %d on replica %d", i, k)
		}
	}
	up := 0.0
	for j := range s.Series.TimeS {
		up += float64(s.Series.Provisioning[j]+s.Series.Loading[j]+s.Series.Ready[j]+s.Series.Draining[j]) * dt
	}
	assert.InDelta(t, up, billed, 1e-6*billed+1e-6, "billed time")
}

func TestQueueScalesUpUnderABurstAndDownAfterItsWindow(t *testing.T) {
	requests := burst(3000, 600, 3000)
	cfg := elasticFleet(1, NewQueue(4), 1, 12)
	cfg.Scaling.ProvisionS, cfg.Scaling.LoadS = 60, 60
	res := runElasticFleet(t, requests, cfg)
	s := res.Scaling
	require.NotEmpty(t, s.Events)
	up, down := s.Events[0], s.Events[len(s.Events)-1]
	assert.Greater(t, up.To, up.From)
	assert.Less(t, down.To, down.From)
	assert.Equal(t, 1, down.To, "back to the minimum")
	// No scale-down within the stabilization window of the last scale-up.
	lastUp := 0.0
	for _, e := range s.Events {
		if e.To > e.From {
			lastUp = e.TimeS
		} else {
			assert.GreaterOrEqual(t, e.TimeS, lastUp+DefaultScaleDownWindowS-1e-6, "%+v", e)
		}
		assert.LessOrEqual(t, e.To, 12)
	}
	assert.Equal(t, 1.0, res.Metrics.CompletedFraction)
	checkLifecycles(t, res, cfg.Plant.TimeStepS)
	// The new replicas became ready a cold start after they started.
	for _, l := range s.Lifecycles[1:] {
		if !math.IsNaN(l.ReadyS) {
			assert.InDelta(t, l.StartedS+120, l.ReadyS, 0.2)
		}
	}
}

func TestUtilizationScales(t *testing.T) {
	requests := burst(3000, 600, 2000)
	cfg := elasticFleet(1, NewUtilization(0.5), 1, 8)
	cfg.Scaling.ProvisionS, cfg.Scaling.LoadS = 30, 30
	res := runElasticFleet(t, requests, cfg)
	require.NotEmpty(t, res.Scaling.Events)
	assert.Greater(t, res.Scaling.Events[0].To, 1)
	checkLifecycles(t, res, cfg.Plant.TimeStepS)
}

// schedule parses a schedule of rows.
func schedule(t *testing.T, rows string) *Schedule {
	s, err := ParseSchedule("plan.csv", []byte(ScheduleHeader+"\n"+rows))
	require.NoError(t, err)
	return s
}

func TestScheduleAndOracle(t *testing.T) {
	requests := burst(600, 1500, 1600)
	plan := "0,1\n600,4\n1200,1\n"
	readyAt := func(res *Result, at float64) int {
		s := res.Scaling.Series
		for j, end := range s.TimeS {
			if end > at+1e-9 {
				return s.Ready[j]
			}
		}
		return -1
	}
	for _, oracle := range []bool{false, true} {
		cfg := elasticFleet(1, &ScheduleScaler{Schedule: schedule(t, plan), Oracle: oracle, LeadS: 300 + 30}, 0, 10)
		res := runElasticFleet(t, requests, cfg)
		checkLifecycles(t, res, cfg.Plant.TimeStepS)
		if oracle {
			assert.Equal(t, 4, readyAt(res, 600), "the oracle is ready at the window's start")
			assert.Equal(t, 4, readyAt(res, 1199))
		} else {
			assert.Equal(t, 1, readyAt(res, 600), "a schedule pays the cold start")
			assert.Equal(t, 4, readyAt(res, 901))
		}
		assert.Equal(t, 1, readyAt(res, 1500))
	}
	// The oracle's lead at the start: a window within it is ready at 0.
	cfg := elasticFleet(1, &ScheduleScaler{Schedule: schedule(t, "0,1\n100,3\n"), Oracle: true, LeadS: 330}, 0, 10)
	res := runElasticFleet(t, requests, cfg)
	assert.Equal(t, 3, res.Scaling.InitialReplicas)
	assert.Equal(t, 3, readyAt(res, 0))
}

func TestRouterWaitCountsInTTFT(t *testing.T) {
	requests := []plant.Request{{ID: 0, ArrivalTimeS: 0, PromptTokens: 100, OutputTokens: 5},
		{ID: 1, ArrivalTimeS: 5, PromptTokens: 100, OutputTokens: 5}, {ID: 2, ArrivalTimeS: 200, PromptTokens: 100, OutputTokens: 5}}
	cfg := elasticFleet(0, &ScheduleScaler{Schedule: schedule(t, "0,0\n60,1\n")}, 0, 2)
	cfg.Scaling.ProvisionS, cfg.Scaling.LoadS = 20, 20
	res := runElasticFleet(t, requests, cfg)
	require.Len(t, res.Scaling.Lifecycles, 1)
	l := res.Scaling.Lifecycles[0]
	assert.InDelta(t, 100, l.ReadyS, 0.2)
	for i, rec := range res.Requests[:2] {
		require.True(t, rec.Completed())
		assert.Equal(t, requests[i].ArrivalTimeS, rec.ArrivalTimeS)
		assert.GreaterOrEqual(t, rec.TTFTS(), l.ReadyS-rec.ArrivalTimeS, "request %d waited at the router", i)
	}
	assert.Less(t, res.Requests[2].TTFTS(), 1.0)
	checkLifecycles(t, res, cfg.Plant.TimeStepS)
	// Nothing ever ready: the requests stay unfinished.
	cfg = elasticFleet(0, &ScheduleScaler{Schedule: schedule(t, "0,0\n")}, 0, 2)
	cfg.Plant.MaxSimulationTimeS = 300
	cfg.Router = LeastOutstanding{}
	res, err := Simulate(requests, cfg)
	require.NoError(t, err)
	assert.Equal(t, 0.0, res.Metrics.CompletedFraction)
	assert.Equal(t, []int{-1, -1, -1}, res.Assignment)
}

func TestScalingValidate(t *testing.T) {
	good := func() *Scaling { return elasticFleet(2, Static{}, 1, 4).Scaling }
	for _, tc := range []struct {
		field string
		edit  func(*Scaling)
	}{
		{"min_replicas", func(s *Scaling) { s.MinReplicas = -1 }},
		{"min_replicas", func(s *Scaling) { s.MinReplicas = 5 }},
		{"max_replicas", func(s *Scaling) { s.MaxReplicas = 0 }},
		{"initial_replicas", func(s *Scaling) { s.InitialReplicas = 9 }},
		{"scale_interval_s", func(s *Scaling) { s.IntervalS = 0 }},
		{"provision_time_s", func(s *Scaling) { s.ProvisionS = math.NaN() }},
		{"load_time_s", func(s *Scaling) { s.LoadS = -1 }},
		{"gpu_cost_per_hour", func(s *Scaling) { s.GPUCostPerHour = math.Inf(1) }},
		{"energy_price_per_kwh", func(s *Scaling) { s.EnergyPricePerKWh = -0.1 }},
	} {
		s := good()
		tc.edit(s)
		var se *ScalingError
		require.ErrorAs(t, s.Validate(), &se, tc.field)
		assert.Equal(t, tc.field, se.Field)
	}
	require.NoError(t, good().Validate())
}

func TestParseAutoscaler(t *testing.T) {
	for _, spec := range []string{"static", "queue:target=4", "queue:target=0.5,up=10,down=0,tolerance=0", "utilization:target=0.8,down=60", "schedule:x.csv", "oracle:x.csv"} {
		assert.NoError(t, ParseAutoscaler(spec), spec)
	}
	for _, tc := range []struct{ spec, want string }{
		{"fastest", `unknown autoscaler "fastest"`},
		{"static:1", "static takes no option"},
		{"queue", "expected queue:target=N"},
		{"queue:target=0", "option target: 0: expected a positive number"},
		{"queue:up=3", "option target: missing"},
		{"queue:target=2,target=3", "option target: given twice"},
		{"queue:target=2,speed=3", "option speed: unknown option"},
		{"queue:target=2,uppods=1.5", "option uppods: 1.5: expected a whole number"},
		{"queue:target=2,uppercent=-5", "option uppercent: -5: expected a percentage"},
		{"queue:target=2,down=-1", "option down: -1: expected a stabilization window"},
		{"queue:target=NaN", `option target: "NaN": expected a finite number`},
		{"utilization:target=1.5", "option target: 1.5: expected a utilization"},
		{"queue:target", "option target: expected KEY=VALUE"},
		{"schedule:", "expected schedule:FILE"},
	} {
		err := ParseAutoscaler(tc.spec)
		var oe *OptionError
		require.ErrorAs(t, err, &oe, tc.spec)
		assert.Contains(t, err.Error(), tc.want, tc.spec)
		assert.Contains(t, err.Error(), "--autoscale", tc.spec)
	}
}

func TestStabilizedFollowsHPA(t *testing.T) {
	q := NewQueue(10)
	q.seed(4)
	at := func(now float64, waiting, ready, requested int) int {
		n, _, err := q.Scale(&ScaleObservation{TimeS: now, Waiting: waiting, Ready: ready, Requested: requested})
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 4, at(30, 42, 4, 4), "within the 10% tolerance of 10 per replica")
	assert.Equal(t, 8, at(60, 80, 4, 4), "a scale-up at once")
	assert.Equal(t, 8, at(90, 0, 8, 8), "a scale-down waits for its window")
	assert.Equal(t, 8, at(359, 0, 8, 8))
	assert.Equal(t, 0, at(361, 0, 8, 8), "the window passed the 8")
}

func TestParseSchedule(t *testing.T) {
	s, err := ParseSchedule("p.csv", []byte("start_s,replicas\r\n0,2\r\n\r\n60.5,0\r\n120,7\r\n"))
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 60.5, 120}, s.Starts)
	assert.Equal(t, []int{2, 0, 7}, s.Replicas)
	assert.Equal(t, []int{2, 4, 5}, s.Lines)
	assert.Equal(t, 0, s.window(60.4))
	assert.Equal(t, 1, s.window(60.5))
	assert.Equal(t, 2, s.window(1e9))
	n, i := s.most(30, 130)
	assert.Equal(t, 7, n)
	assert.Equal(t, 2, i)
	for _, tc := range []struct{ data, want string }{
		{"", "schedule p.csv: empty"},
		{"start,replicas\n0,1\n", `line 1: header "start,replicas"`},
		{"start_s,replicas\n", "no window"},
		{"start_s,replicas\n5,1\n", "line 2: start_s 5: the first window must start at 0"},
		{"start_s,replicas\n0,1\n0,2\n", "line 3: start_s 0: expected a start after the previous window's (0): windows must not overlap or go backwards"},
		{"start_s,replicas\n0,1\n60,1\n30,2\n", "line 4: start_s 30"},
		{"start_s,replicas\n0,-1\n", `line 2: replicas "-1": expected a whole number from 0 to 4096`},
		{"start_s,replicas\n0,1.5\n", `line 2: replicas "1.5"`},
		{"start_s,replicas\n0,1\nNaN,2\n", `line 3: start_s "NaN": expected a finite number`},
		{"start_s,replicas\n0,1\n-3,2\n", `line 3: start_s "-3"`},
		{"start_s,replicas\n0,1\n1e400,2\n", `line 3: start_s "1e400"`},
		{"start_s,replicas\n0,1,2\n", "line 2: 3 fields"},
		{"start_s,replicas\n0\n", "line 2: 1 fields"},
	} {
		_, err := ParseSchedule("p.csv", []byte(tc.data))
		var se *ScheduleError
		require.ErrorAs(t, err, &se, tc.data)
		assert.Contains(t, err.Error(), tc.want, tc.data)
		assert.Contains(t, err.Error(), "schedule p.csv", tc.data)
	}
}

func FuzzParseSchedule(f *testing.F) {
	f.Add([]byte("start_s,replicas\n0,1\n60,4\n"))
	f.Add([]byte("start_s,replicas\r\n0,0\r\n"))
	f.Add([]byte("start_s,replicas\n0,1\n0,2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchedule("f.csv", data)
		if err != nil {
			var se *ScheduleError
			require.ErrorAs(t, err, &se)
			return
		}
		require.NotEmpty(t, s.Starts)
		require.Equal(t, 0.0, s.Starts[0])
		for i := range s.Starts {
			require.True(t, s.Replicas[i] >= 0 && s.Replicas[i] <= MaxReplicas)
			require.False(t, math.IsNaN(s.Starts[i]) || math.IsInf(s.Starts[i], 0))
			if i > 0 {
				require.Greater(t, s.Starts[i], s.Starts[i-1])
			}
			require.Equal(t, i, s.window(s.Starts[i]))
		}
	})
}

func TestExecAutoscaler(t *testing.T) {
	requests := burst(300, 300, 400)
	exec := func(command string) Config {
		a, err := NewAutoscaler("exec:"+command, AutoscaleOptions{IntervalS: 30})
		require.NoError(t, err)
		cfg := elasticFleet(1, a, 1, 4)
		cfg.Scaling.ProvisionS, cfg.Scaling.LoadS = 0, 0
		return cfg
	}
	// Its answer is followed, its reason kept; it sees the observation.
	res := runElasticFleet(t, requests, exec(`while read l; do case "$l" in *'"max_replicas":4'*) echo '{"replicas": 3, "reason": "sh"}';; *) echo '{"replicas": 1}';; esac; done`))
	require.NotEmpty(t, res.Scaling.Events)
	assert.Equal(t, ScaleEvent{TimeS: 0, From: 1, To: 3, Reason: "sh"}, res.Scaling.Events[0])
	checkLifecycles(t, res, 0.1)
	for _, tc := range []struct{ command, want string }{
		{"echo garbage", `exec autoscaler "echo garbage": decision 0 (at 0 s): answer "garbage": expected {"replicas": N}`},
		{"true", `exec autoscaler "true": decision 0 (at 0 s): exited with status 0 before answering; it wrote nothing`},
		{`read l; echo '{"replicas": 2}'; read l; echo '{"replicas": -1}'`, `decision 1 (at 30 s): answer "{\"replicas\": -1}": field "replicas": -1: expected a whole number from 0 to 4096`},
	} {
		cfg := exec(tc.command)
		cfg.Router = LeastOutstanding{}
		_, err := Simulate(requests, cfg)
		require.Error(t, err, tc.command)
		assert.Contains(t, err.Error(), tc.want, tc.command)
	}
}

func TestParseExecAnswer(t *testing.T) {
	n, reason, err := parseExecAnswer([]byte(`{"replicas": 7, "reason": "forecast"}` + "\n"))
	require.NoError(t, err)
	assert.Equal(t, 7, n)
	assert.Equal(t, "forecast", reason)
	for _, tc := range []struct{ line, want string }{
		{`{}`, `field "replicas": missing`},
		{`{"replicas": 1.5}`, `1.5: expected a whole number`},
		{`{"replicas": 5000}`, `5000: expected a whole number from 0 to 4096`},
		{`{"replicas": "3"}`, `expected {"replicas": N}`},
		{`{"replicas": 3, "speed": 1}`, `unknown field "speed"`},
		{`{"replicas": 3} {}`, `unexpected data after the answer`},
		{`[3]`, `expected {"replicas": N}`},
	} {
		_, _, err := parseExecAnswer([]byte(tc.line))
		require.Error(t, err, tc.line)
		assert.Contains(t, err.Error(), tc.want, tc.line)
	}
}

func TestFleetPowerBudget(t *testing.T) {
	requests := burst(2000, 400, 500)
	run := func(limit float64, rule string) *Result {
		cfg := elasticFleet(4, Static{}, 1, 4)
		cfg.Scaling.PowerLimitW, cfg.Scaling.PowerBudget = limit, rule
		return runElasticFleet(t, requests, cfg)
	}
	free := run(0, "")
	require.Greater(t, free.Scaling.PeakPowerW, 200.0)
	for _, rule := range BudgetNames {
		capped := run(200, rule)
		assert.Zero(t, free.Scaling.PowerViolationSteps)
		if rule == BudgetEqual {
			assert.LessOrEqual(t, capped.Scaling.PeakPowerW, 200+1e-9, "an equal share is never passed when the lowest clock fits it")
			assert.Zero(t, capped.Scaling.PowerViolationSteps)
		}
		assert.Less(t, capped.Scaling.PeakPowerW, free.Scaling.PeakPowerW, rule)
		// Below what four idle GPUs draw at their lowest clock: every
		// step is over, and says by how much.
		starved := run(10, rule)
		assert.Greater(t, starved.Scaling.PowerViolationSteps, 0)
		assert.InDelta(t, starved.Scaling.PeakPowerW-10, starved.Scaling.PowerViolationW, 1e-9)
	}
	var se *ScalingError
	cfg := elasticFleet(4, Static{}, 1, 4)
	cfg.Scaling.PowerLimitW = -1
	_, err := Simulate(requests, cfg)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "fleet_power_limit_w", se.Field)
}

func TestGroupsScaleOnTheirOwn(t *testing.T) {
	requests := burst(3000, 600, 3000)
	cfg := elasticFleet(1, NewQueue(4), 1, 12)
	cfg.Groups = []Group{cfg.Groups[0], cfg.Groups[0]}
	cfg.Groups[0].Name, cfg.Groups[1].Name = "steady", "burst"
	cfg.Scaling.ProvisionS, cfg.Scaling.LoadS = 60, 60
	cfg.Scaling.Groups = []GroupScaling{
		{Autoscaler: NewQueue(4), MinReplicas: 2, MaxReplicas: 2, InitialReplicas: 2},
		{Autoscaler: NewQueue(4), MinReplicas: 0, MaxReplicas: 5, InitialReplicas: 1},
	}
	res := runElasticFleet(t, requests, cfg)
	s := res.Scaling
	require.NotEmpty(t, s.Events)
	for _, e := range s.Events {
		assert.Equal(t, "burst", e.Group, "the steady group's bounds are fixed")
		assert.LessOrEqual(t, e.To, 5)
	}
	assert.Equal(t, 3, s.InitialReplicas)
	for j := range s.Series.TimeS {
		assert.LessOrEqual(t, s.Series.Ready[j]+s.Series.Draining[j], 7)
		assert.GreaterOrEqual(t, s.Series.Ready[j]+s.Series.Draining[j], 2)
	}
	checkLifecycles(t, res, cfg.Plant.TimeStepS)
	// A Scaling whose groups do not match the fleet's is refused.
	cfg.Scaling.Groups = cfg.Scaling.Groups[:1]
	_, err := Simulate(requests, cfg)
	require.ErrorContains(t, err, "an elastic fleet of 2 groups scales each on its own")
}

func TestFleetFileBoundsOnlyForAnElasticFleet(t *testing.T) {
	data := []byte(`[{"name": "a", "replicas": 2, "min_replicas": 1, "max_replicas": 4}]`)
	load := func(string) (*profile.Profile, error) { return profile.Default(), nil }
	_, err := ParseFile("f.json", data, GroupDefaults{Replicas: 1}, load)
	require.ErrorContains(t, err, `field "max_replicas": unknown field: expected name, profile, replicas, scheduler, controller or role`)
	groups, bounds, err := ParseElasticFile("f.json", data, GroupDefaults{Replicas: 1}, load)
	require.NoError(t, err)
	assert.Equal(t, 2, groups[0].Replicas)
	require.NotNil(t, bounds[0].MinReplicas)
	assert.Equal(t, 1, *bounds[0].MinReplicas)
	assert.Equal(t, 4, *bounds[0].MaxReplicas)
	_, bounds, err = ParseElasticFile("f.json", []byte(`[{"replicas": 2}]`), GroupDefaults{Replicas: 1}, load)
	require.NoError(t, err)
	assert.Equal(t, []Bounds{{}}, bounds)
	for _, tc := range []struct{ data, want string }{
		{`[{"min_replicas": -1}]`, `field "min_replicas": -1: expected a whole number from 0 to 4096`},
		{`[{"max_replicas": 0}]`, `field "max_replicas": 0: expected a whole number from 1 to 4096`},
		{`[{"max_replicas": 2.5}]`, `field "max_replicas": 2.5`},
		{`[{"gpus": 2}]`, `unknown field: expected name, profile, replicas, min_replicas, max_replicas, autoscale, scheduler, controller or role`},
		{`[{"autoscale": ""}]`, `field "autoscale": "": expected a non-empty string`},
		{`[{"autoscale": "queue"}]`, `field "autoscale": `},
		{`[{"autoscale": "oracle"}]`, `field "autoscale": "oracle": the plain oracle plans a fleet of one group`},
		{`[{"autoscale": "oracle:window=60"}]`, `the plain oracle plans a fleet of one group`},
	} {
		_, _, err := ParseElasticFile("f.json", []byte(tc.data), GroupDefaults{Replicas: 1}, load)
		require.ErrorContains(t, err, tc.want, tc.data)
	}
}

func TestStabilizedScaleUpPolicies(t *testing.T) {
	for _, tc := range []struct {
		current, waiting, want int
		pods                   int
		percent                float64
	}{
		{1, 100, 5, 4, 100},  // 4 more beats 100% more
		{8, 400, 16, 4, 100}, // 100% more beats 4 more
		{0, 100, 4, 4, 100},  // from zero: 4
		{10, 400, 15, 0, 50}, // 50% more
		{3, 100, 50, 4, 1e6}, // unbounded
	} {
		q := NewQueue(2)
		q.UpPods, q.UpPercent = tc.pods, tc.percent
		n, _, err := q.Scale(&ScaleObservation{TimeS: 30, Waiting: tc.waiting, Ready: max(1, tc.current), Requested: tc.current})
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "%+v", tc)
	}
}
