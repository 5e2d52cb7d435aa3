package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnknownFlagsAreSuggested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--norm", "0.5"}, "unknown flag: --norm; did you mean --normalize?"},
		{[]string{"simulate", "--norm=0.5"}, "unknown flag: --norm; did you mean --normalize?"},
		{[]string{"simulate", "--normalise", "0.5"}, "unknown flag: --normalise; did you mean --normalize?"},
		{[]string{"simulate", "--stirde", "5"}, "unknown flag: --stirde; did you mean --stride?"},
		{[]string{"simulate", "--max", "5"}, "unknown flag: --max; did you mean --max-active, --max-elapsed or --max-num-batched-tokens?"},
		{[]string{"simulate", "-normalize", "0.5"}, "unknown shorthand flag: 'n' in -normalize; did you mean --normalize?"},
		{[]string{"sweep", "--schedulers", "static"}, "unknown flag: --schedulers; did you mean --scheduler?"},
		{[]string{"diagnose", "--by-windows", "60"}, "unknown flag: --by-windows; did you mean --by-window?"},
		{[]string{"scenarios", "--rsp", "3"}, "unknown flag: --rsp; did you mean --rps?"},
		{[]string{"validate-profile", "--require-measure", "x"}, "unknown flag: --require-measure; did you mean --require-measured?"},
		{[]string{"--verison"}, "unknown flag: --verison; did you mean --version?"},
		{[]string{"--nosuch"}, "unknown flag: --nosuch"},
		{[]string{"simulate", "--zzzzzzzz"}, "unknown flag: --zzzzzzzz"},
		{[]string{"simulate", "-x"}, "unknown shorthand flag: 'x' in -x"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			s, out, errOut := testStreams("")
			assert.Equal(t, exitUsage, run(context.Background(), tt.args, s))
			assert.Equal(t, "servesim: "+tt.want+"\n", errOut.String())
			assert.Empty(t, out.String())
		})
	}
}

func TestBadFlagValuesNameTheFlagAndWhatIsExpected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--normalize", "abc"}, `--normalize "abc": expected a number in (0, 1)`},
		{[]string{"simulate", "--normalize"}, `--normalize needs a value: a number in (0, 1)`},
		{[]string{"simulate", "--normalize", "1.5"}, `--normalize 1.5: expected a number in (0, 1)`},
		{[]string{"simulate", "--stride", "1e3"}, `--stride "1e3": expected a positive whole number`},
		{[]string{"simulate", "--max-active", "2.5"}, `--max-active "2.5": expected a positive whole number`},
		{[]string{"simulate", "--time-step", "fast"}, `--time-step "fast": expected a positive number of seconds`},
		{[]string{"simulate", "--summary=maybe"}, `--summary "maybe": expected true or false`},
		{[]string{"sweep", "--jobs", "two"}, `--jobs "two": expected a whole number (0: all cores)`},
		{[]string{"sweep", "--scheduler", `static,"chunked`}, `--scheduler "static,\"chunked": expected a comma-separated list of schedulers (double-quote an item that holds a comma)`},
		{[]string{"scenarios", "--seed", "1.5"}, `--seed "1.5": expected a whole number`},
		{[]string{"scenarios", "--rps", "fast"}, `--rps "fast": expected a positive, finite rate in requests per second`},
		{[]string{"diagnose", "--by-window", "soon"}, `--by-window "soon": expected a positive number of seconds`},
		{[]string{"diagnose", "--gpu-hourly-cost", "$2"}, `--gpu-hourly-cost "$2": expected a finite number of USD per hour, 0 or more`},
		{[]string{"validate-profile", "--require-measured=perhaps", "x"}, `--require-measured "perhaps": expected true or false`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			s, out, errOut := testStreams("")
			assert.Equal(t, exitUsage, run(context.Background(), tt.args, s))
			assert.Equal(t, "servesim: "+tt.want+"\n", errOut.String())
			assert.Empty(t, out.String())
		})
	}
}

// junkValue returns a value flag f cannot parse, or "" for a flag that
// takes any string.
func junkValue(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "string":
		return ""
	case "list":
		return `a"b`
	}
	return "§x"
}

// TestEveryFlagValueErrorNamesTheFlag gives every flag of every command a
// value it cannot parse: the one stderr line names the flag and what it
// expects, never Go's or pflag's wording.
func TestEveryFlagValueErrorNamesTheFlag(t *testing.T) {
	t.Parallel()
	s, _, _ := testStreams("")
	checked := 0
	for _, sub := range newRootCmd(s, nil, commands()).Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		sub.Flags().VisitAll(func(f *pflag.Flag) {
			junk := junkValue(f)
			if junk == "" {
				return
			}
			checked++
			args := []string{sub.Name(), "--" + f.Name + "=" + junk}
			if sub.Name() == "validate-profile" {
				args = append(args, "x.csv")
			}
			s, out, errOut := testStreams("")
			assert.Equal(t, exitUsage, run(context.Background(), args, s), "%q", args)
			assert.Empty(t, out.String())
			want := regexp.MustCompile(`^servesim: --` + regexp.QuoteMeta(f.Name) + ` "` + regexp.QuoteMeta(junk) + `": expected [a-z][^\n]*\n$`)
			assert.Regexp(t, want, strings.ReplaceAll(errOut.String(), `\"`, `"`), "%q", args)
			for _, leak := range []string{"strconv", "invalid argument", "invalid syntax", "parse error"} {
				assert.NotContains(t, errOut.String(), leak, "%q", args)
			}
		})
	}
	assert.Greater(t, checked, 40, "flags checked across the commands")
}

func TestSweepAxesAcceptSpaces(t *testing.T) {
	t.Parallel()
	got, code, _, stderr := parseFlags(t, "sweep", newSweepCmd,
		"--scheduler", "static, chunked", "--controller", " max , fixed:960", "--normalize", "none, 0.5", "--power-limit", "55, 64.8")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, []string{"static", "chunked"}, got.Schedulers)
	assert.Equal(t, []string{"max", "fixed:960"}, got.Controllers)
	assert.Equal(t, []string{"none", "0.5"}, got.Normalize)
	assert.Equal(t, []string{"55", "64.8"}, got.PlantAxes["power-limit"])
	assert.Equal(t, 16, got.sweep.Shard().Len())
}
