package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/cobra"

	"servesim/internal/plant"
)

// plantParam is one plant parameter settable from the command line: its
// flag, its JSON name in the plant object and how to reach the field.
type plantParam struct {
	flag  string
	field string
	usage string
	// expected says what the flag accepts, completing "expected ...".
	expected string
	// set stores a parsed value; it fails for a value the field cannot hold.
	set func(p *plant.Plant, v float64) error
	// get returns the field's value.
	get func(p *plant.Plant) float64
}

func floatParam(flag, field, usage, expected string, ptr func(*plant.Plant) *float64) plantParam {
	return plantParam{
		flag: flag, field: field, usage: usage, expected: expected,
		set: func(p *plant.Plant, v float64) error { *ptr(p) = v; return nil },
		get: func(p *plant.Plant) float64 { return *ptr(p) },
	}
}

// plantParams are the plant flags shared by simulate and sweep, in the
// order of the reference's ServingPlant fields.
var plantParams = []plantParam{
	floatParam("time-step", "time_step_s", "step length in seconds", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.TimeStepS }),
	floatParam("kv-capacity", "kv_capacity_tokens", "KV-cache capacity in tokens", "a positive number of tokens", func(p *plant.Plant) *float64 { return &p.KVCapacityTokens }),
	floatParam("kv-reserve", "decode_kv_reserve_tokens_per_active", "KV tokens reserved per decoding request before admitting a prefill", "a positive number of tokens", func(p *plant.Plant) *float64 { return &p.DecodeKVReserveTokensPerActive }),
	{
		flag: "max-active", field: "maximum_active_requests", usage: "maximum concurrently decoding requests",
		expected: "a positive whole number",
		set: func(p *plant.Plant, v float64) error {
			if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
				return fmt.Errorf("%v: expected a whole number", v)
			}
			p.MaxActiveRequests = int(v)
			return nil
		},
		get: func(p *plant.Plant) float64 { return float64(p.MaxActiveRequests) },
	},
	floatParam("ambient", "ambient_temperature_c", "ambient temperature in C", "a finite number of degrees C", func(p *plant.Plant) *float64 { return &p.AmbientTemperatureC }),
	floatParam("thermal-tau", "thermal_time_constant_s", "thermal time constant in seconds", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.ThermalTimeConstantS }),
	floatParam("thermal-resistance", "thermal_resistance_c_per_w", "thermal resistance in C per W", "a positive number of C per W", func(p *plant.Plant) *float64 { return &p.ThermalResistanceCPerW }),
	floatParam("power-limit", "power_limit_w", "board power limit in W (proxy power governor)", "a positive number of W", func(p *plant.Plant) *float64 { return &p.PowerLimitW }),
	floatParam("thermal-limit", "thermal_limit_c", "temperature in C at which the clock steps down", "a number of degrees C above --ambient", func(p *plant.Plant) *float64 { return &p.ThermalLimitC }),
	floatParam("horizon", "reporting_horizon_s", "reporting horizon in seconds for unfinished_requests_at_reporting_horizon", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.ReportingHorizonS }),
	floatParam("max-sim-time", "maximum_simulation_time_s", "simulated seconds after which the run stops", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.MaxSimulationTimeS }),
}

// parseValue parses one value of a plant flag; the error does not name the
// flag. It checks the syntax and what the field can hold; the plant's
// Validate checks the rest.
func (pp plantParam) parseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil {
		var probe plant.Plant
		err = pp.set(&probe, v)
	}
	if err != nil {
		return 0, fmt.Errorf("%q: expected %s", s, pp.expected)
	}
	return v, nil
}

// plantFlagValue is the pflag.Value of one plant flag of simulate.
type plantFlagValue struct {
	param plantParam
	plant *plant.Plant
}

// String returns the field's current value.
func (v plantFlagValue) String() string {
	if v.plant == nil {
		return ""
	}
	return strconv.FormatFloat(v.param.get(v.plant), 'g', -1, 64)
}

// Set parses and stores a value.
func (v plantFlagValue) Set(s string) error {
	x, err := v.param.parseValue(s)
	if err != nil {
		return err
	}
	return v.param.set(v.plant, x)
}

// Expected says what the flag accepts.
func (v plantFlagValue) Expected() string { return v.param.expected }

// Type names the value's kind in help.
func (v plantFlagValue) Type() string {
	if v.param.flag == "max-active" {
		return "int"
	}
	return "float"
}

// checkMaxElapsed validates --max-elapsed, or sets it to no limit when the
// flag was not given.
func checkMaxElapsed(cmd *cobra.Command, maxElapsedS *float64) error {
	if !cmd.Flags().Changed("max-elapsed") {
		*maxElapsedS = plant.NoElapsedLimit
		return nil
	}
	if math.IsNaN(*maxElapsedS) || *maxElapsedS < 0 {
		return usageErrorf("--max-elapsed %v: expected a nonnegative number of seconds", *maxElapsedS)
	}
	return nil
}
