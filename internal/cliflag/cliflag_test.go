package cliflag

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompleteItems(t *testing.T) {
	t.Parallel()
	values := []string{"static", "continuous", "chunked"}
	tests := []struct {
		typed string
		want  []string
	}{
		{"", values},
		{"c", []string{"continuous", "chunked"}},
		{"static,", []string{"static,static", "static,continuous", "static,chunked"}},
		{"static,ch", []string{"static,chunked"}},
		{"a,b,co", []string{"a,b,continuous"}},
		{"x", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, CompleteItems(tt.typed, values), "%q", tt.typed)
	}
}

func TestSuggestFlags(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{Use: "x"}
	for _, name := range []string{"kv-capacity", "kv-reserve", "trace", "stride", "secret"} {
		cmd.Flags().String(name, "", "")
	}
	require.NoError(t, cmd.Flags().MarkHidden("secret"))
	tests := []struct {
		typed string
		want  []string
	}{
		{"kv", []string{"--kv-capacity", "--kv-reserve"}},
		{"KV-Cap", []string{"--kv-capacity"}},
		{"trac", []string{"--trace"}},
		{"tracer", []string{"--trace"}},
		{"strid", []string{"--stride"}},
		{"secre", nil},
		{"", nil},
		{"qqqqqq", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Suggest(cmd, tt.typed), tt.typed)
	}
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"norm", "normalize", 5}, {"stirde", "stride", 2}, {"kitten", "sitting", 3}} {
		assert.Equal(t, tt.want, levenshtein(tt.a, tt.b), "%q %q", tt.a, tt.b)
		assert.Equal(t, tt.want, levenshtein(tt.b, tt.a), "%q %q", tt.b, tt.a)
	}
}

func TestOrList(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a", OrList([]string{"a"}))
	assert.Equal(t, "a or b", OrList([]string{"a", "b"}))
	assert.Equal(t, "a, b or c", OrList([]string{"a", "b", "c"}))
}

// FuzzSplitList: a comma list never panics, fails only with ErrBadList,
// and without quotes or line breaks is the comma-separated items trimmed of
// spaces.
func FuzzSplitList(f *testing.F) {
	for _, seed := range []string{
		"static,chunked", "static, chunked", " a , b ,", "", ",", "a,,b", `"a,b",c`, `a"b`, `"a`,
		"a\nb", "a\r\nb", "\t", " \" a\" ", "é,ü", "\x00,\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		items, err := SplitList(s)
		if err != nil {
			if !errors.Is(err, ErrBadList) {
				t.Fatalf("%q: unexpected error %v", s, err)
			}
			return
		}
		if s == "" || strings.ContainsAny(s, "\"\r\n") {
			return
		}
		var want []string
		for _, item := range strings.Split(s, ",") {
			want = append(want, strings.TrimSpace(item))
		}
		if !slices.Equal(items, want) {
			t.Fatalf("%q: got %q, want %q", s, items, want)
		}
	})
}

func TestBigIntTakesAnyInteger(t *testing.T) {
	t.Parallel()
	var b BigInt
	assert.Equal(t, "0", b.String())
	require.NoError(t, b.Set("-99999999999999999999999"))
	assert.Equal(t, "-99999999999999999999999", b.String())
	assert.EqualError(t, b.Set("1.5"), `"1.5": expected a whole number`)
	assert.Equal(t, "int", b.Type())
}

func TestRegisterCompletionsOnlyWhereTheFlagExists(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "servesim"}
	with := &cobra.Command{Use: "with", Run: func(*cobra.Command, []string) {}}
	with.Flags().String("color", "red", "")
	with.Flags().String("out", "", "")
	with.Flags().String("dir", "", "")
	without := &cobra.Command{Use: "without", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(with, without)
	RegisterCompletions(root, map[string]cobra.CompletionFunc{"color": Choices([]string{"red", "green"})}, map[string]PathFlag{"out": {Extensions: []string{"csv"}}, "dir": {Folder: true}})
	fn, found := with.GetFlagCompletionFunc("color")
	require.True(t, found)
	got, _ := fn(with, nil, "g")
	assert.Equal(t, []string{"green"}, got)
	assert.Equal(t, []string{"csv"}, with.Flags().Lookup("out").Annotations[cobra.BashCompFilenameExt])
	assert.Contains(t, with.Flags().Lookup("dir").Annotations, cobra.BashCompSubdirsInDir)
	_, found = without.GetFlagCompletionFunc("color")
	assert.False(t, found)
}
