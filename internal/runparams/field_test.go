package runparams

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamedWordsEverySetting: the settings of a *FieldError read bare
// until Named words them, wherever the error is in the chain and whatever
// it wraps, with the text around it and the chain kept.
func TestNamedWordsEverySetting(t *testing.T) {
	t.Parallel()
	inner := errors.New("no such file")
	limit := Errorf("%s %d: needs %s", Setting("kv-block-tokens"), 8, Setting("prefix-cache"))
	tests := []struct {
		name      string
		err       error
		bare, got string
		field     Setting
	}{
		{"one setting", Errorf("%s %d: expected a positive whole number", Setting("stride"), 0),
			"stride 0: expected a positive whole number", "--stride 0: expected a positive whole number", "stride"},
		{"several, the first at fault", Errorf("%s %d is above %s %d", Setting("min-replicas"), 3, Setting("max-replicas"), 2),
			"min-replicas 3 is above max-replicas 2", "--min-replicas 3 is above --max-replicas 2", "min-replicas"},
		{"wrapped in a plain error", fmt.Errorf("plant: %w", Errorf("%s: %w", Setting("time-step"), inner)),
			"plant: time-step: no such file", "plant: --time-step: no such file", "time-step"},
		{"wrapping another", Errorf("%s %s: %w", Setting("fleet"), "f.json", limit),
			"fleet f.json: kv-block-tokens 8: needs prefix-cache", "--fleet f.json: --kv-block-tokens 8: needs --prefix-cache", "fleet"},
		{"a late usage error", &LateUsageError{Err: Errorf("%s %q: not a glob pattern", Setting("evaluations"), "[")},
			`evaluations "[": not a glob pattern`, `--evaluations "[": not a glob pattern`, "evaluations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, tt.err, tt.bare)
			named := Named(tt.err, dashed)
			assert.EqualError(t, named, tt.got)
			assert.ErrorIs(t, named, tt.err)
			var fe *FieldError
			require.ErrorAs(t, named, &fe)
			assert.Equal(t, tt.field, fe.Field)
		})
	}
	assert.ErrorIs(t, Named(tests[2].err, dashed), inner, "the chain is kept")
	plain := errors.New("trace x.csv line 3: bad")
	assert.Equal(t, plain, Named(plain, dashed), "an error without settings is returned as it is")
}

func TestLateUsageErrorExitsTwo(t *testing.T) {
	t.Parallel()
	inner := errors.New("bad pattern")
	err := error(&LateUsageError{Err: inner})
	assert.EqualError(t, err, "bad pattern")
	assert.ErrorIs(t, err, inner)
	assert.Equal(t, 2, err.(*LateUsageError).ExitCode())
}
