package plantflag

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
)

// Param is one plant parameter settable from the command line: its flag,
// its JSON name in the plant object and how to reach the field.
type Param struct {
	Flag  string
	Field string
	Usage string
	// Expected says what the flag accepts, completing "expected ...".
	Expected string
	// Set stores a parsed value; it fails for a value the field cannot hold.
	Set func(p *plant.Plant, v float64) error
	// Get returns the field's value.
	Get func(p *plant.Plant) float64
}

func floatParam(flag, field, usage, expected string, ptr func(*plant.Plant) *float64) Param {
	return Param{
		Flag: flag, Field: field, Usage: usage, Expected: expected,
		Set: func(p *plant.Plant, v float64) error { *ptr(p) = v; return nil },
		Get: func(p *plant.Plant) float64 { return *ptr(p) },
	}
}

// Params are the plant flags shared by simulate, sweep and capacity, in the
// order of the reference's ServingPlant fields.
var Params = []Param{
	floatParam("time-step", "time_step_s", "step length in seconds", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.TimeStepS }),
	floatParam("kv-capacity", "kv_capacity_tokens", "KV-cache capacity in tokens", "a positive number of tokens", func(p *plant.Plant) *float64 { return &p.KVCapacityTokens }),
	floatParam("kv-reserve", "decode_kv_reserve_tokens_per_active", "KV tokens reserved per decoding request before admitting a prefill", "a positive number of tokens", func(p *plant.Plant) *float64 { return &p.DecodeKVReserveTokensPerActive }),
	{
		Flag: "max-active", Field: "maximum_active_requests", Usage: "maximum concurrently decoding requests",
		Expected: "a positive whole number",
		Set: func(p *plant.Plant, v float64) error {
			if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
				return fmt.Errorf("%v: expected a whole number", v)
			}
			p.MaxActiveRequests = int(v)
			return nil
		},
		Get: func(p *plant.Plant) float64 { return float64(p.MaxActiveRequests) },
	},
	floatParam("ambient", "ambient_temperature_c", "ambient temperature in C", "a finite number of degrees C", func(p *plant.Plant) *float64 { return &p.AmbientTemperatureC }),
	floatParam("thermal-tau", "thermal_time_constant_s", "thermal time constant in seconds", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.ThermalTimeConstantS }),
	floatParam("thermal-resistance", "thermal_resistance_c_per_w", "thermal resistance in C per W", "a positive number of C per W", func(p *plant.Plant) *float64 { return &p.ThermalResistanceCPerW }),
	floatParam("power-limit", "power_limit_w", "board power limit in W (proxy power governor)", "a positive number of W", func(p *plant.Plant) *float64 { return &p.PowerLimitW }),
	floatParam("thermal-limit", "thermal_limit_c", "temperature in C at which the clock steps down", "a number of degrees C above --ambient", func(p *plant.Plant) *float64 { return &p.ThermalLimitC }),
	floatParam("horizon", "reporting_horizon_s", "reporting horizon in seconds for unfinished_requests_at_reporting_horizon", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.ReportingHorizonS }),
	floatParam("max-sim-time", "maximum_simulation_time_s", "simulated seconds after which the run stops", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.MaxSimulationTimeS }),
}

// ByFlag returns the parameter of a plant flag, and whether there is one.
func ByFlag(flag string) (Param, bool) {
	for _, pp := range Params {
		if pp.Flag == flag {
			return pp, true
		}
	}
	return Param{}, false
}

// AxisKey is the output name of a sweep axis: the plant field's JSON name
// for a plant flag, else the flag name.
func AxisKey(axis string) string {
	if pp, ok := ByFlag(axis); ok {
		return pp.Field
	}
	return axis
}

// ParseValue parses one value of a plant flag; the error does not name the
// flag. It checks the syntax and what the field can hold; the plant's
// Validate checks the rest.
func (pp Param) ParseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil {
		var probe plant.Plant
		err = pp.Set(&probe, v)
	}
	if err != nil {
		return 0, fmt.Errorf("%q: expected %s", s, pp.Expected)
	}
	return v, nil
}

// FlagNamed prefixes a plant validation error (*plant.FieldError) with the
// flag that sets its field; other errors pass as they are.
func FlagNamed(err error) error {
	var fe *plant.FieldError
	if errors.As(err, &fe) {
		for _, pp := range Params {
			if pp.Field == fe.Field {
				return fmt.Errorf("--%s: %w", pp.Flag, err)
			}
		}
	}
	return err
}

// Value is the pflag.Value of one plant flag, stored in Plant.
type Value struct {
	Param Param
	Plant *plant.Plant
}

// AddPlant defines every plant flag on cmd, stored in p.
func AddPlant(cmd *cobra.Command, p *plant.Plant) {
	for _, pp := range Params {
		cmd.Flags().Var(Value{pp, p}, pp.Flag, pp.Usage)
	}
}

// String returns the field's current value.
func (v Value) String() string {
	if v.Plant == nil {
		return ""
	}
	return strconv.FormatFloat(v.Param.Get(v.Plant), 'g', -1, 64)
}

// Set parses and stores a value.
func (v Value) Set(s string) error {
	x, err := v.Param.ParseValue(s)
	if err != nil {
		return err
	}
	return v.Param.Set(v.Plant, x)
}

// Expected says what the flag accepts.
func (v Value) Expected() string { return v.Param.Expected }

// Type names the value's kind in help.
func (v Value) Type() string {
	if v.Param.Flag == "max-active" {
		return "int"
	}
	return "float"
}

// CheckMaxElapsed validates --max-elapsed, or sets it to no limit when the
// flag was not given.
func CheckMaxElapsed(cmd *cobra.Command, maxElapsedS *float64) error {
	if !cmd.Flags().Changed("max-elapsed") {
		*maxElapsedS = plant.NoElapsedLimit
		return nil
	}
	if math.IsNaN(*maxElapsedS) || *maxElapsedS < 0 {
		return fmt.Errorf("--max-elapsed %v: expected a nonnegative number of seconds", *maxElapsedS)
	}
	return nil
}

// AddPlantAxes defines every plant flag on cmd as a comma-separated list
// of values, a sweep's axis; the function it returns gives the values of
// the flags given, by flag name.
func AddPlantAxes(cmd *cobra.Command) func() map[string][]string {
	values := make([][]string, len(Params))
	for i, pp := range Params {
		cliflag.AddList(cmd, &values[i], pp.Flag, nil, "values, each "+pp.Expected, pp.Usage+" (comma-separated values; default: simulate's)")
	}
	return func() map[string][]string {
		axes := map[string][]string{}
		for i, pp := range Params {
			if cmd.Flags().Changed(pp.Flag) {
				axes[pp.Flag] = values[i]
			}
		}
		return axes
	}
}
