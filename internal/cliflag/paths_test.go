package cliflag

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathsCmd is a command with a file flag read from stdin with "-", one
// that refuses "-", a -o written to stdout, a list and a repeatable flag.
func pathsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().String("trace", "", "")
	cmd.Flags().String("fleet", "", "")
	cmd.Flags().StringP("output", "o", "", "")
	cmd.Flags().String("name", "", "") // not a path
	var items []string
	AddList(cmd, &items, "profile", []string{"embedded"}, "profile paths", "")
	cmd.Flags().StringArray("bench", nil, "")
	return cmd
}

var testPaths = map[string]PathFlag{
	"trace":   {Expected: "a trace file", Stdio: true},
	"fleet":   {Expected: "a fleet file", NotStdio: "a fleet file is read from a file, not stdin"},
	"output":  {Expected: "a file path", Stdio: true},
	"profile": {Expected: "a profile", NotStdio: "a profile is read from files"},
	"bench":   {Expected: "a bench file", NotStdio: "read from files"},
}

func TestCheckPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // "" for none
	}{
		{"none given", nil, ""},
		{"files", []string{"--trace", "t.csv", "--fleet", "f.json", "-o", "r.json", "--profile", "a.csv,b.csv", "--bench", "b.json"}, ""},
		{"stdin where it is", []string{"--trace", "-", "-o", "-"}, ""},
		{"empty", []string{"--trace="}, `--trace "": expected a trace file (an empty value is not "the default": leave the flag out for it)`},
		{"empty as its own argument", []string{"--fleet", ""}, `--fleet "": expected a fleet file (an empty value is not "the default": leave the flag out for it)`},
		{"empty output", []string{"--output="}, `-o "": expected a file path (an empty value is not "the default": leave the flag out for it)`},
		{"shorthand with =", []string{"-o="}, `-o "=": expected a file path (-o= gives the value "=", not an empty one: leave the flag out for the default)`},
		{"empty list", []string{"--profile="}, `--profile "": expected a profile (an empty value is not "the default": leave the flag out for it)`},
		{"empty list item: the command's", []string{"--profile", "a.csv,"}, ""},
		{"empty quoted list item", []string{"--profile", `""`}, `--profile "": expected a profile (an empty value is not "the default": leave the flag out for it)`},
		{"empty repeat", []string{"--bench", "b.json", "--bench="}, `--bench "": expected a bench file (an empty value is not "the default": leave the flag out for it)`},
		{"dash refused", []string{"--fleet", "-"}, `--fleet "-": a fleet file is read from a file, not stdin`},
		{"dash in a list", []string{"--profile", "a.csv,-"}, `--profile "-": a profile is read from files`},
		{"dash repeated", []string{"--bench", "-"}, `--bench "-": read from files`},
		{"not a path flag", []string{"--name="}, ""},
		{"first flag by name", []string{"--trace=", "--fleet="}, `--fleet "": expected a fleet file (an empty value is not "the default": leave the flag out for it)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := pathsCmd()
			require.NoError(t, cmd.ParseFlags(tt.args))
			err := CheckPaths(cmd, testPaths)
			if tt.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
}

func TestCheckPathArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		p    PathFlag
		want string
	}{
		{"files", []string{"a.jsonl", "b.jsonl"}, testPaths["fleet"], ""},
		{"empty", []string{"a.jsonl", ""}, testPaths["fleet"], `merge "": expected a fleet file, not an empty argument`},
		{"dash refused", []string{"-"}, testPaths["fleet"], `merge "-": a fleet file is read from a file, not stdin`},
		{"dash is stdin", []string{"-"}, testPaths["trace"], ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckPathArgs("merge", tt.args, tt.p)
			if tt.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
}
