// Package exectest is the child's side of the exec: controller protocol,
// for tests: it serves a plant.ClockController over JSON Lines, decoding
// the observations with encoding/json, independently of the plant's own
// encoder, and refusing a field it does not know.
package exectest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"servesim/internal/plant"
)

// Observation is one observation line as the protocol specifies it.
type Observation struct {
	TimeS                  float64   `json:"time_s"`
	StepIndex              int       `json:"step_index"`
	PrefillQueue           int       `json:"prefill_queue"`
	DecodeActive           int       `json:"decode_active"`
	PrefillRemainingTokens float64   `json:"prefill_remaining_tokens"`
	GeneratedDecodeTokens  float64   `json:"generated_decode_tokens"`
	OldestPrefillAgeS      float64   `json:"oldest_prefill_age_s"`
	KVTokens               float64   `json:"kv_tokens"`
	KVCapacityTokens       float64   `json:"kv_capacity_tokens"`
	TemperatureC           float64   `json:"temperature_c"`
	PreviousClockMHz       float64   `json:"previous_clock_mhz"`
	PreviousPowerW         float64   `json:"previous_power_w"`
	ClockLevelsMHz         []float64 `json:"clock_levels_mhz"`
	ArrivedRequests        int       `json:"arrived_requests"`
	CompletedRequests      int       `json:"completed_requests"`
	RealizedClockLevelsMHz []float64 `json:"realized_clock_levels_mhz"`
	// PowerCapW is present only under a fleet power budget.
	PowerCapW *float64 `json:"power_cap_w"`
}

// Decode reads one observation line strictly: every field present, no
// other field.
func Decode(line []byte) (plant.Observation, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return plant.Observation{}, err
	}
	want := 16
	if _, capped := fields["power_cap_w"]; capped {
		want++
	}
	if len(fields) != want {
		return plant.Observation{}, fmt.Errorf("%d fields, want %d", len(fields), want)
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	var o Observation
	if err := d.Decode(&o); err != nil {
		return plant.Observation{}, err
	}
	capW := math.Inf(1)
	if o.PowerCapW != nil {
		capW = *o.PowerCapW
	}
	return plant.Observation{TimeS: o.TimeS, StepIndex: o.StepIndex, PrefillQueue: o.PrefillQueue, DecodeActive: o.DecodeActive,
		PrefillRemainingTokens: o.PrefillRemainingTokens, GeneratedDecodeTokens: o.GeneratedDecodeTokens,
		OldestPrefillAgeS: o.OldestPrefillAgeS, KVTokens: o.KVTokens, KVCapacityTokens: o.KVCapacityTokens,
		TemperatureC: o.TemperatureC, PreviousClockMHz: o.PreviousClockMHz, PreviousPowerW: o.PreviousPowerW,
		ClockLevelsMHz: o.ClockLevelsMHz, ArrivedRequests: o.ArrivedRequests, CompletedRequests: o.CompletedRequests,
		RealizedClockLevelsMHz: o.RealizedClockLevelsMHz, PowerCapW: capW}, nil
}

// Serve answers every observation line from r with c's clock on w, one
// {"clock_mhz": MHZ} line each, until r ends.
func Serve(r io.Reader, w io.Writer, c plant.ClockController) error {
	in := bufio.NewScanner(r)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(w)
	for in.Scan() {
		obs, err := Decode(in.Bytes())
		if err != nil {
			return fmt.Errorf("observation %q: %w", in.Bytes(), err)
		}
		answer, err := json.Marshal(map[string]float64{"clock_mhz": c.RequestClock(obs)})
		if err != nil {
			return err
		}
		out.Write(append(answer, '\n'))
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return in.Err()
}
