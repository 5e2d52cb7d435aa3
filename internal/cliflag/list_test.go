package cliflag

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"static,chunked", []string{"static", "chunked"}},
		{"static, chunked", []string{"static", "chunked"}},
		{" static ,\tchunked ", []string{"static", "chunked"}},
		{"max", []string{"max"}},
		{"", nil},
		{"a,,b", []string{"a", "", "b"}},
		{`"a,b.csv", c.csv`, []string{"a,b.csv", "c.csv"}},
		{`"say ""hi""",x`, []string{`say "hi"`, "x"}},
		{"a\nb,c", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		got, err := SplitList(tt.in)
		require.NoError(t, err, "%q", tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
	for _, bad := range []string{`a"b`, `"a`, `"a"b`} {
		_, err := SplitList(bad)
		assert.ErrorIs(t, err, ErrBadList, "%q", bad)
	}
}

func TestListFlagReplacesTheDefaultThenAppends(t *testing.T) {
	t.Parallel()
	var items []string
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	AddList(cmd, &items, "scheduler", []string{"chunked"}, "schedulers", "")
	assert.Equal(t, []string{"chunked"}, items)
	assert.Equal(t, "[chunked]", cmd.Flags().Lookup("scheduler").DefValue)
	require.NoError(t, cmd.Flags().Parse([]string{"--scheduler", "static, continuous", "--scheduler=chunked"}))
	assert.Equal(t, []string{"static", "continuous", "chunked"}, items)
	assert.True(t, cmd.Flags().Changed("scheduler"))

	var none []string
	AddList(cmd, &none, "power-limit", nil, "values", "")
	assert.Empty(t, cmd.Flags().Lookup("power-limit").DefValue, "an empty default shows no default in help")
}
