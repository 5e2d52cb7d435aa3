package plant

import (
	"io"
	"math"
	"strconv"
	"time"

	"servesim/internal/execsession"
)

// ExecController is a clock controller in another process, the user's own
// (--controller exec:COMMAND), on an execsession.Session (its rules: how
// the child is started, timed, failed, killed and reaped). The first
// RequestClock starts COMMAND with /bin/sh -c; then, for each decision, it
// writes one observation to the child's stdin as a line of JSON
// (appendObservation) and reads one answer line from its stdout:
// {"clock_mhz": MHZ} with an optional "plan": [MHZ, ...], which is checked
// and not used (parseAnswer). The child's stderr goes to Stderr.
//
// A failed controller returns NaN, which stops Simulate; Close then
// returns the reason, naming the controller ("exec controller COMMAND")
// and the step. Close must always be called (Run does).
type ExecController struct {
	// Session is the child and the exchange of lines with it (Command,
	// Timeout and Stderr are its).
	execsession.Session
	out []byte // the observation being written
}

// NewExecController returns a controller that runs command when first
// consulted; a zero timeout means execsession.DefaultTimeout.
func NewExecController(command string, timeout time.Duration, stderr io.Writer) *ExecController {
	if timeout <= 0 {
		timeout = execsession.DefaultTimeout
	}
	return &ExecController{Session: execsession.Session{
		Command: command, Timeout: timeout, Stderr: stderr,
		Who:   "exec controller " + execsession.QuoteAtMost([]byte(command), execsession.QuoteBytes),
		Where: func(at int) string { return "step " + strconv.Itoa(at) },
	}}
}

// Name implements ClockController.
func (*ExecController) Name() string { return "exec_clock_controller" }

// RequestClock implements ClockController: the child's answer, or NaN once
// the controller has failed.
func (c *ExecController) RequestClock(obs Observation) float64 {
	if c.Done() {
		return math.NaN()
	}
	c.out = appendObservation(c.out[:0], &obs)
	line, err := c.Ask(c.out, obs.StepIndex)
	if err != nil {
		return math.NaN()
	}
	clock, err := parseAnswer(line)
	if err != nil {
		c.Reject(obs.StepIndex, line, err)
		return math.NaN()
	}
	return clock
}
