package plant_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/execsession"
	"servesim/internal/plant"
	"servesim/internal/plant/exectest"
	"servesim/internal/profile"
	"servesim/internal/sharedtest"
	"servesim/internal/testsupport"
)

// childEnv makes the test binary an exec: controller child: "reactive"
// serves plant.Reactive through exectest.
const childEnv = "SERVESIM_TEST_EXEC_CHILD"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(childEnv); mode {
	case "":
		os.Exit(m.Run())
	case "reactive":
		if err := exectest.Serve(os.Stdin, os.Stdout, plant.Reactive{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: unknown child mode\n", childEnv, mode)
		os.Exit(2)
	}
}

// reactiveChild is the command that runs this test binary as a child that
// serves the built-in reactive controller.
func reactiveChild() string {
	return childEnv + "=reactive exec " + testsupport.ShellQuote(os.Args[0])
}

// runWith simulates w on p with the chunked scheduler under c.
func runWith(t *testing.T, w plant.Workload, p plant.Plant, c plant.ClockController) (*plant.Report, error) {
	t.Helper()
	return plant.Run(w, plant.Config{Plant: p, Scheduler: plant.ChunkedPrefill{}, Controller: c})
}

// TestExecReproducesReactive: a child serving the built-in reactive
// controller over the protocol reproduces the built-in run exactly (every
// value of the result but controller_name): the observations and the
// answers cross the pipes without losing a bit. The cases reach every
// branch of reactive: pressure up and down, hot (ambient 60 C), and the L4
// rows whose realized clocks differ from the requested levels.
func TestExecReproducesReactive(t *testing.T) {
	defaults, err := plant.DefaultTrace(300)
	require.NoError(t, err)
	hot := plant.NewPlant(profile.Default())
	hot.AmbientTemperatureC = 60
	cases := []struct {
		name string
		w    func(t *testing.T) plant.Workload
		p    func(t *testing.T) plant.Plant
	}{
		{"defaults", func(*testing.T) plant.Workload { return defaults },
			func(*testing.T) plant.Plant { return plant.NewPlant(profile.Default()) }},
		{"hot", func(*testing.T) plant.Workload { return defaults }, func(*testing.T) plant.Plant { return hot }},
		{"L4 rows, code trace", func(t *testing.T) plant.Workload {
			f, err := os.Open(sharedtest.CodeTrace(t))
			require.NoError(t, err)
			defer f.Close()
			w, err := plant.LoadWorkload(f, "code", 120)
			require.NoError(t, err)
			return w
		}, func(t *testing.T) plant.Plant {
			p, err := profile.Load(sharedtest.Reference(t, "data", "l4_proxy", "l4_profile.csv"))
			require.NoError(t, err)
			return plant.NewPlant(p)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, p := tc.w(t), tc.p(t)
			want, err := runWith(t, w, p, plant.Reactive{})
			require.NoError(t, err)
			c, err := plant.NewController("exec:" + reactiveChild())
			require.NoError(t, err)
			got, err := runWith(t, w, p, c)
			require.NoError(t, err)
			assert.Equal(t, "exec_clock_controller", got.ControllerName)
			got.ControllerName, got.Summary.Controller = want.ControllerName, want.Summary.Controller
			// %v writes NaN (a time never reached) as NaN on both sides.
			require.Equal(t, fmt.Sprintf("%v", *want), fmt.Sprintf("%v", *got))
			levels := map[float64]bool{}
			for _, mhz := range got.Trajectory.RequestedClockMHz {
				levels[mhz] = true
			}
			assert.Greater(t, len(levels), 2, "reactive moved between levels")
		})
	}
}

// TestExecFailures: a child that breaks the protocol ends the run with one
// line that names the controller, says what happened at which step and
// quotes at most 80 bytes of what the child wrote; the child is reaped.
// Every answer parseAnswer refuses is one case; the ways a child process
// fails are execsession's (TestSessionFailures), here one of each kind
// shows them worded as the controller's.
func TestExecFailures(t *testing.T) {
	w, err := plant.DefaultTrace(60)
	require.NoError(t, err)
	p := plant.NewPlant(profile.Default())
	// answerThen answers n observations with 1500 MHz, then runs rest.
	answerThen := func(n int, rest string) string {
		return fmt.Sprintf(`i=0; while [ $i -lt %d ] && read l; do echo '{"clock_mhz": 1500}'; i=$((i+1)); done; %s`, n, rest)
	}
	tests := []struct{ name, script, want string }{
		{"exits with 0 mid-run", answerThen(5, `exit 0`),
			`step 5: exited with status 0 before answering; it wrote nothing`},
		{"malformed", answerThen(3, `read l; echo 'clock 1500'; sleep 30`),
			`step 3: answer "clock 1500": not a JSON object like {"clock_mhz": 1500}`},
		{"trailing garbage", `read l; echo '{"clock_mhz": 1500} x'; sleep 30`,
			`step 0: answer "{\"clock_mhz\": 1500} x": more after the JSON object`},
		{"unknown field", `read l; echo '{"clock_mhz": 1500, "boost": true}'; sleep 30`,
			`step 0: answer "{\"clock_mhz\": 1500, \"boost\": true}": unknown field "boost": expected clock_mhz and optionally plan`},
		{"no clock", `read l; echo '{"plan": [1500]}'; sleep 30`,
			`step 0: answer "{\"plan\": [1500]}": no clock_mhz`},
		{"NaN as a string", `read l; echo '{"clock_mhz": "NaN"}'; sleep 30`,
			`step 0: answer "{\"clock_mhz\": \"NaN\"}": clock_mhz is a string: expected a finite number`},
		{"NaN as Python writes it", `read l; echo '{"clock_mhz": NaN}'; sleep 30`,
			`step 0: answer "{\"clock_mhz\": NaN}": clock_mhz NaN: expected a finite number`},
		{"overflow", `read l; echo '{"clock_mhz": 1e999}'; sleep 30`,
			`step 0: answer "{\"clock_mhz\": 1e999}": clock_mhz "1e999": expected a finite number`},
		{"non-finite plan", `read l; echo '{"clock_mhz": 1500, "plan": [1500, -Infinity]}'; sleep 30`,
			`step 0: answer "{\"clock_mhz\": 1500, \"plan\": [1500, -Infinity]}": plan value -Infinity: expected a finite number`},
		{"timeout", answerThen(2, `sleep 30`),
			`step 2: no answer within 300ms (--exec-timeout); it wrote nothing`},
		{"never reads", `while :; do echo '{"clock_mhz": 1500}'; done`,
			`did not take its observation within 300ms (--exec-timeout)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			command, timeout, gone := testsupport.FailingChild(t, tt.script, tt.want)
			c, err := plant.NewControllerWith("exec:"+command, plant.ControllerOptions{ExecTimeout: timeout})
			require.NoError(t, err)
			rep, err := runWith(t, w, p, c)
			require.Error(t, err)
			assert.Nil(t, rep)
			msg := err.Error()
			assert.NotContains(t, msg, "\n", "one line")
			assert.True(t, strings.HasPrefix(msg, "exec controller "), msg)
			assert.Contains(t, msg, tt.want)
			gone()
			// Closing again changes nothing.
			assert.Equal(t, err, c.(*plant.ExecController).Close())
		})
	}
}

// TestExecQuotesALongCommandBriefly: the error names the command, cut to
// 80 bytes.
func TestExecQuotesALongCommandBriefly(t *testing.T) {
	w, err := plant.DefaultTrace(10)
	require.NoError(t, err)
	command := "exit 4; " + strings.Repeat("#", 200)
	c, err := plant.NewController("exec:" + command)
	require.NoError(t, err)
	_, err = runWith(t, w, plant.NewPlant(profile.Default()), c)
	require.EqualError(t, err, "exec controller "+strconv.Quote(command[:80])+"...: step 0: exited with status 4 before answering; it wrote nothing")
}

// panicky is a scheduler that panics at step 20.
type panicky struct{ plant.ChunkedPrefill }

func (s panicky) Schedule(obs plant.Observation) plant.Action {
	if obs.StepIndex == 20 {
		panic("scheduler bug")
	}
	return s.ChunkedPrefill.Schedule(obs)
}

// TestExecChildIsReapedAfterAPanic: a panic during the run still closes the
// controller.
func TestExecChildIsReapedAfterAPanic(t *testing.T) {
	w, err := plant.DefaultTrace(30)
	require.NoError(t, err)
	pids, gone := testsupport.PidFile(t)
	c, err := plant.NewController("exec:echo $$ > " + testsupport.ShellQuote(pids) + `; while read l; do echo '{"clock_mhz": 1500}'; done`)
	require.NoError(t, err)
	require.PanicsWithValue(t, "scheduler bug", func() {
		_, _ = plant.Run(w, plant.Config{Plant: plant.NewPlant(profile.Default()), Scheduler: panicky{}, Controller: c})
	})
	gone()
}

func TestExecSpecs(t *testing.T) {
	c, err := plant.NewControllerWith("exec:python3 ctl.py --gain=2:3", plant.ControllerOptions{})
	require.NoError(t, err)
	e := c.(*plant.ExecController)
	assert.Equal(t, "python3 ctl.py --gain=2:3", e.Command)
	assert.Equal(t, execsession.DefaultTimeout, e.Timeout)
	assert.Equal(t, "exec_clock_controller", e.Name())
	for _, bad := range []string{"exec:", "exec:  ", "exec"} {
		_, err := plant.NewController(bad)
		assert.ErrorContains(t, err, strconv.Quote(bad))
	}
}

// TestExecStepAllocatesNothing: a decision costs one write and one read
// through reused buffers.
func TestExecStepAllocatesNothing(t *testing.T) {
	c, err := plant.NewController(`exec:while read l; do echo '{"clock_mhz": 1500, "plan": [1500, 1230]}'; done`)
	require.NoError(t, err)
	defer c.(*plant.ExecController).Close()
	prof := profile.Default()
	obs := plant.Observation{TimeS: 12.3, StepIndex: 123, PrefillQueue: 3, DecodeActive: 7, KVTokens: 12345.5, KVCapacityTokens: 131072,
		TemperatureC: 41.25, PreviousClockMHz: 1500, PreviousPowerW: 55.5, ClockLevelsMHz: prof.ClockMHz, RealizedClockLevelsMHz: prof.RealizedClockLevelsMHz()}
	require.Equal(t, 1500.0, c.RequestClock(obs))
	allocs := testing.AllocsPerRun(200, func() {
		if c.RequestClock(obs) != 1500 {
			t.Fatal("wrong answer")
		}
	})
	assert.Zero(t, allocs)
}

// BenchmarkExecController runs the embedded trace (18,000 steps) on the
// embedded proxy under built-in controllers and under exec: children, child
// start and end included, and reports the cost per step: the difference
// between an exec: run and the built-in reactive one is the protocol's
// per-step cost (one observation written and one answer read).
func BenchmarkExecController(b *testing.B) {
	w, err := plant.DefaultTrace(plant.NoElapsedLimit)
	require.NoError(b, err)
	p := plant.NewPlant(profile.Default())
	example, err := filepath.Abs("../../docs/examples/reactive_controller.py")
	require.NoError(b, err)
	for _, bc := range []struct{ name, spec, needs string }{
		{"max", "max", ""},
		{"reactive", "reactive", ""},
		{"exec-go-reactive", "exec:" + reactiveChild(), ""},
		{"exec-sh-max", `exec:while read -r l; do echo '{"clock_mhz": 2040}'; done`, ""},
		{"exec-python-reactive", "exec:/usr/bin/python3 " + example, "/usr/bin/python3"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.needs != "" {
				if _, err := os.Stat(bc.needs); err != nil {
					b.Skipf("no %s", bc.needs)
				}
			}
			b.ReportAllocs()
			steps := 0
			for b.Loop() {
				c, err := plant.NewController(bc.spec)
				require.NoError(b, err)
				rep, err := plant.Run(w, plant.Config{Plant: p, Scheduler: plant.ChunkedPrefill{}, Controller: c, Options: plant.Options{Summary: true}})
				require.NoError(b, err)
				steps = rep.Steps
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
		})
	}
}
