package runparams

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWarnerNamesTheSettings: a warning's settings read bare without a
// Name and as Name words them with one, those of an error it quotes too;
// the other arguments are formatted as fmt formats them.
func TestWarnerNamesTheSettings(t *testing.T) {
	t.Parallel()
	limit := Errorf("%s %d: needs %s", Setting("kv-block-tokens"), 8, Setting("prefix-cache"))
	tests := []struct {
		name       string
		format     string
		args       []any
		bare, flag string
	}{
		{"one setting", "servesim: %s %s: %d of %d sizes\n", []any{Setting("resume"), "auto", 3, 4},
			"servesim: resume auto: 3 of 4 sizes\n", "servesim: --resume auto: 3 of 4 sizes\n"},
		{"a setting twice", "past %s %s; %s %s covers them (%.0f%%)", []any{Setting("max-sim-time"), "10", Setting("max-sim-time"), "60", 10.0},
			"past max-sim-time 10; max-sim-time 60 covers them (10%)", "past --max-sim-time 10; --max-sim-time 60 covers them (10%)"},
		{"a quoted error naming settings", "%s: %v", []any{Setting("fleet"), fmt.Errorf("f.json: %w", limit)},
			"fleet: f.json: kv-block-tokens 8: needs prefix-cache", "--fleet: f.json: --kv-block-tokens 8: needs --prefix-cache"},
		{"a plain error", "%s %s: %v", []any{Setting("resume"), "auto", errors.New("permission denied")},
			"resume auto: permission denied", "--resume auto: permission denied"},
		{"a string is no setting", "%s %s", []any{"resume", Setting("jobs")}, "resume jobs", "resume --jobs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bare, flag strings.Builder
			Warner{Writer: &bare}.Warnf(tt.format, tt.args...)
			Warner{Writer: &flag, Name: dashed}.Warnf(tt.format, tt.args...)
			assert.Equal(t, tt.bare, bare.String())
			assert.Equal(t, tt.flag, flag.String())
			assert.Equal(t, tt.flag, Format(dashed, tt.format, tt.args...))
		})
	}
}
