package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"servesim/internal/execsession"
)

// ExecAutoscaler is an autoscaler in another process, the user's own
// (--autoscale exec:COMMAND), on the clock controllers' JSON Lines
// protocol and rules (execsession.Session): at each decision it writes the
// ScaleObservation as one line of JSON to the child's stdin and reads one
// answer line from its stdout, {"replicas": N} with an optional "reason":
// "..." for the scale event. N is a whole number from 0 to MaxReplicas (the
// fleet clamps it to its bounds). A child that exits, answers anything
// else (another field, a value of the wrong kind, trailing data) or takes
// longer than --exec-timeout fails the run, naming the decision; Close
// ends it.
type ExecAutoscaler struct {
	execsession.Session
	decisions int
	out       []byte
}

// NewExecAutoscaler returns the autoscaler of command, started at its
// first decision.
func NewExecAutoscaler(command string, o AutoscaleOptions) *ExecAutoscaler {
	timeout := o.Exec.ExecTimeout
	if timeout <= 0 {
		timeout = execsession.DefaultTimeout
	}
	interval := o.IntervalS
	return &ExecAutoscaler{Session: execsession.Session{
		Command: command, Timeout: timeout, Stderr: o.Exec.ExecStderr,
		Who: "exec autoscaler " + strconv.Quote(quoteShort(command)),
		Where: func(at int) string {
			return fmt.Sprintf("decision %d (at %s s)", at, fmtG(float64(at)*interval))
		},
	}}
}

// Name implements Autoscaler.
func (a *ExecAutoscaler) Name() string { return ExecName + ":" + a.Command }

// execAnswer is an exec: autoscaler's answer.
type execAnswer struct {
	Replicas *float64 `json:"replicas"`
	Reason   *string  `json:"reason"`
}

// Scale implements Autoscaler.
func (a *ExecAutoscaler) Scale(obs *ScaleObservation) (int, string, error) {
	at := a.decisions
	a.decisions++
	out, err := json.Marshal(obs)
	if err != nil {
		return 0, "", err
	}
	a.out = append(append(a.out[:0], out...), '\n')
	line, err := a.Ask(a.out, at)
	if err != nil {
		return 0, "", err
	}
	n, reason, err := parseExecAnswer(line)
	if err != nil {
		a.Reject(at, line, err)
		return 0, "", a.Err()
	}
	if reason == "" {
		reason = "exec"
	}
	return n, reason, nil
}

// parseExecAnswer reads an answer line: {"replicas": N[, "reason": "..."]}.
func parseExecAnswer(line []byte) (int, string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var ans execAnswer
	if err := dec.Decode(&ans); err != nil {
		return 0, "", fmt.Errorf(`expected {"replicas": N} with an optional "reason": %v`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, "", errors.New("unexpected data after the answer")
	}
	if ans.Replicas == nil {
		return 0, "", errors.New(`field "replicas": missing`)
	}
	if n := *ans.Replicas; n != math.Trunc(n) || n < 0 || n > MaxReplicas {
		return 0, "", fmt.Errorf(`field "replicas": %v: expected a whole number from 0 to %d`, n, MaxReplicas)
	}
	reason := ""
	if ans.Reason != nil {
		reason = *ans.Reason
	}
	return int(*ans.Replicas), reason, nil
}
