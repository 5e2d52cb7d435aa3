package plant

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/profile"
)

func TestValidateReturnsFieldErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Plant)
		field string
		value float64
		msg   string
	}{
		{"time step", func(p *Plant) { p.TimeStepS = -1 }, "time_step_s", -1, "time_step_s -1: must be finite and positive"},
		{"active", func(p *Plant) { p.MaxActiveRequests = 0 }, "maximum_active_requests", 0, "maximum_active_requests 0: must be finite and positive"},
		{"ambient", func(p *Plant) { p.AmbientTemperatureC = math.Inf(1) }, "ambient_temperature_c", math.Inf(1), "ambient_temperature_c +Inf: must be finite"},
		{"thermal limit", func(p *Plant) { p.ThermalLimitC = 20 }, "thermal_limit_c", 20, "thermal_limit_c 20: must exceed ambient_temperature_c 25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlant(profile.Default())
			tc.edit(&p)
			err := p.Validate()
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Equal(t, tc.value, fe.Value)
			assert.EqualError(t, err, tc.msg)
		})
	}
	assert.ErrorIs(t, NewPlant(nil).Validate(), ErrNoProfile)

	var fe *FieldError
	require.ErrorAs(t, SLO{TPOTSeconds: -2}.Validate(), &fe)
	assert.Equal(t, FieldError{Field: "tpot_slo_s", Value: -2, Why: "must be finite and positive"}, *fe)
	_, _, err := NormalizeOfferedLoad([]Request{{PromptTokens: 1, OutputTokens: 1}}, profile.Default(), 1.5)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "target_utilization", fe.Field)
}
