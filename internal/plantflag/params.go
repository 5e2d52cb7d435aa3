package plantflag

import (
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/cobra"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/runparams"
)

// Value is the pflag.Value of one plant flag, stored in Plant.
type Value struct {
	Param runparams.Param
	Plant *plant.Plant
}

// AddPlant defines every plant flag on cmd, stored in p.
func AddPlant(cmd *cobra.Command, p *plant.Plant) {
	for _, pp := range runparams.Params {
		cmd.Flags().Var(Value{pp, p}, pp.Name, pp.Usage)
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
	if v.Param.Name == "max-active" {
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
	values := make([][]string, len(runparams.Params))
	for i, pp := range runparams.Params {
		cliflag.AddList(cmd, &values[i], pp.Name, nil, "values, each "+pp.Expected, pp.Usage+" (comma-separated values; default: simulate's)")
	}
	return func() map[string][]string {
		axes := map[string][]string{}
		for i, pp := range runparams.Params {
			if cmd.Flags().Changed(pp.Name) {
				axes[pp.Name] = values[i]
			}
		}
		return axes
	}
}
