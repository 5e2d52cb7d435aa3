package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/plant"
	"servesim/internal/plant/exectest"
	"servesim/internal/sharedtest"
)

// reactiveControllerMain is the test binary as the command
// servesim-reactive-controller (on the PATH of the tests and scripts): an
// exec: controller child that serves the built-in reactive controller,
// decoding the observations with encoding/json.
func reactiveControllerMain() {
	if err := exectest.Serve(os.Stdin, os.Stdout, plant.Reactive{}); err != nil {
		fmt.Fprintln(os.Stderr, "servesim-reactive-controller:", err)
		os.Exit(1)
	}
}

// pythonExample is the Python example controller of docs/clock-control.md.
const pythonExample = "../../docs/examples/reactive_controller.py"

// TestExecControllerReproducesReactive: an exec: child that re-implements
// reactive makes simulate write the built-in reactive's document byte for
// byte, controller_name aside. The Go child (this test binary) always runs;
// the manual's Python example runs where /usr/bin/python3 exists.
func TestExecControllerReproducesReactive(t *testing.T) {
	t.Parallel()
	example, err := filepath.Abs(pythonExample)
	require.NoError(t, err)
	children := []struct{ name, command, needs string }{
		{"Go child", "servesim-reactive-controller", ""},
		{"Python example", "/usr/bin/python3 " + example, "/usr/bin/python3"},
	}
	runs := []struct {
		name string
		args []string
	}{
		{"defaults", []string{"--max-elapsed", "600"}},
		{"hot", []string{"--max-elapsed", "300", "--ambient", "60"}},
		{"L4 rows, code trace", []string{"--max-elapsed", "120", "--profile", sharedtest.Reference(t, "data", "l4_proxy", "l4_profile.csv"),
			"--trace", sharedtest.CodeTrace(t), "--normalize", "0.5"}},
	}
	for _, child := range children {
		t.Run(child.name, func(t *testing.T) {
			if child.needs != "" {
				if _, err := os.Stat(child.needs); err != nil {
					t.Skipf("%s is not installed, so the Python example is not run (the Go child covers the protocol): %v", child.needs, err)
				}
			}
			for _, r := range runs {
				t.Run(r.name, func(t *testing.T) {
					simulate := func(controller string) []byte {
						var out, errOut bytes.Buffer
						args := append([]string{"simulate", "--controller", controller}, r.args...)
						code := run(context.Background(), args, &streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
						require.Equal(t, exitOK, code, "%s: %s", controller, errOut.String())
						require.Empty(t, errOut.String())
						return out.Bytes()
					}
					want := simulate("reactive")
					got := simulate("exec:" + child.command)
					const wantName, gotName = `"controller_name": "reactive_clock_controller"`, `"controller_name": "exec_clock_controller"`
					require.Equal(t, 1, bytes.Count(got, []byte(gotName)))
					require.Equal(t, 1, bytes.Count(got, []byte(`"controller": "exec_clock_controller"`)), "summary.controller")
					got = bytes.Replace(got, []byte(gotName), []byte(wantName), 1)
					got = bytes.Replace(got, []byte(`"controller": "exec_clock_controller"`), []byte(`"controller": "reactive_clock_controller"`), 1)
					require.True(t, bytes.Equal(want, got), "the documents differ")
					assert.Greater(t, bytes.Count(want, []byte("\n")), 100, "a full document")
				})
			}
		})
	}
}

// TestManualShowsThePythonExample: the Python block of the manual's clock
// control page is the example file, which TestExecControllerReproducesReactive
// runs.
func TestManualShowsThePythonExample(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/clock-control.md")
	require.NoError(t, err)
	example, err := os.ReadFile(pythonExample)
	require.NoError(t, err)
	assert.Contains(t, string(page), "```python\n"+string(example)+"```\n")
	assert.Equal(t, 15, bytes.Count(example, []byte("\n")), "a 15-line example")
}
