package plantflag

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/runparams"
)

func TestValueSetsThePlant(t *testing.T) {
	t.Parallel()
	p := plant.NewPlant(nil)
	for _, pp := range runparams.Params {
		v := Value{pp, &p}
		require.NoError(t, v.Set("7"), pp.Name)
		assert.Equal(t, 7.0, pp.Get(&p), pp.Name)
		assert.Equal(t, "7", v.String(), pp.Name)
	}
	assert.Equal(t, 7, p.MaxActiveRequests)
	assert.Equal(t, "int", Value{Param: runparams.Params[3]}.Type())
	assert.Equal(t, "", Value{Param: runparams.Params[0]}.String(), "no plant yet")
}

func TestAddPlantAxesGivesTheFlagsGiven(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{Use: "sweep", RunE: func(*cobra.Command, []string) error { return nil }}
	axes := AddPlantAxes(cmd)
	cmd.SetArgs([]string{"--power-limit", "55, 64.8", "--max-active", "32"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, map[string][]string{"power-limit": {"55", "64.8"}, "max-active": {"32"}}, axes())
}

// TestSLOFlagsOneRule: a flag given must be a finite positive number of
// seconds, 0 included, with one message whatever the fault, naming the
// setting (the command names it as its flag).
func TestSLOFlagsOneRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--ttft-slo", "0.4", "--tpot-slo", "0.05", "--e2e-slo", "5"}, ""},
		{[]string{"--ttft-slo", "0"}, "ttft-slo 0: expected a finite positive number of seconds"},
		{[]string{"--tpot-slo", "-1"}, "tpot-slo -1: expected a finite positive number of seconds"},
		{[]string{"--e2e-slo", "Inf"}, "e2e-slo +Inf: expected a finite positive number of seconds"},
		{[]string{"--e2e-slo", "NaN"}, "e2e-slo NaN: expected a finite positive number of seconds"},
	}
	for _, tt := range tests {
		var slo plant.SLO
		cmd := &cobra.Command{Use: "x", RunE: func(cmd *cobra.Command, _ []string) error { return CheckSLO(cmd, &slo) }}
		AddSLO(cmd, &slo)
		cmd.SetArgs(tt.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if tt.want == "" {
			require.NoError(t, err)
			assert.Equal(t, plant.SLO{TTFTSeconds: 0.4, TPOTSeconds: 0.05, E2ESeconds: 5}, slo)
			continue
		}
		assert.EqualError(t, err, tt.want, "%v", tt.args)
	}
	var slo plant.SLO
	cmd := &cobra.Command{Use: "x"}
	AddSLO(cmd, &slo)
	err := cmd.Flags().Set("ttft-slo", "abc")
	require.Error(t, err)
	assert.Equal(t, "a finite positive number of seconds", cmd.Flags().Lookup("ttft-slo").Value.(interface{ Expected() string }).Expected())
}
