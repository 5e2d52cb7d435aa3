package runparams

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"servesim/internal/plant"
)

// Embedded names the embedded profile or trace in a sweep's profiles and
// traces.
const Embedded = "embedded"

// Param is one plant parameter of a run: its name (its flag's, without
// dashes), its JSON name in the plant object and how to reach the field.
type Param struct {
	Name  string
	Field string
	Usage string
	// Expected says what the parameter accepts, completing "expected ...".
	Expected string
	// Set stores a parsed value; it fails for a value the field cannot hold.
	Set func(p *plant.Plant, v float64) error
	// Get returns the field's value.
	Get func(p *plant.Plant) float64
}

func floatParam(name, field, usage, expected string, ptr func(*plant.Plant) *float64) Param {
	return Param{
		Name: name, Field: field, Usage: usage, Expected: expected,
		Set: func(p *plant.Plant, v float64) error { *ptr(p) = v; return nil },
		Get: func(p *plant.Plant) float64 { return *ptr(p) },
	}
}

// Params are the plant parameters shared by simulate, sweep and capacity,
// in the order of the reference's ServingPlant fields.
var Params = []Param{
	floatParam("time-step", "time_step_s", "step length in seconds", "a positive number of seconds", func(p *plant.Plant) *float64 { return &p.TimeStepS }),
	floatParam("kv-capacity", "kv_capacity_tokens", "KV-cache capacity in tokens", "a positive number of tokens", func(p *plant.Plant) *float64 { return &p.KVCapacityTokens }),
	floatParam("kv-reserve", "decode_kv_reserve_tokens_per_active", "KV tokens reserved per decoding request before admitting a prefill", "a positive number of tokens", func(p *plant.Plant) *float64 { return &p.DecodeKVReserveTokensPerActive }),
	{
		Name: "max-active", Field: "maximum_active_requests", Usage: "maximum concurrently decoding requests",
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

// ByName returns the plant parameter of a name, and whether there is one.
func ByName(name string) (Param, bool) {
	for _, pp := range Params {
		if pp.Name == name {
			return pp, true
		}
	}
	return Param{}, false
}

// AxisKey is the output name of a sweep axis: the plant field's JSON name
// for a plant parameter, else the axis name.
func AxisKey(axis string) string {
	if pp, ok := ByName(axis); ok {
		return pp.Field
	}
	return axis
}

// ParseValue parses one value of a plant parameter; the error does not
// name the parameter. It checks the syntax and what the field can hold; the plant's
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

// FieldNamed prefixes a plant validation error (*plant.FieldError) with
// the setting of its field, as a *FieldError; other errors pass as they
// are.
func FieldNamed(err error) error {
	var fe *plant.FieldError
	if errors.As(err, &fe) {
		for _, pp := range Params {
			if pp.Field == fe.Field {
				return Errorf("%s: %w", Setting(pp.Name), err)
			}
		}
	}
	return err
}
