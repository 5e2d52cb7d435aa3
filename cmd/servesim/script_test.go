package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/sharedtest"
)

// TestMain lets the test binary act as the real servesim binary inside the
// end-to-end scripts: `exec servesim ...` runs main in a new process, and
// `exec blockedwrite ...` runs the test command of output_test.go.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"servesim":     main,
		"blockedwrite": blockedWrite,
		// An exec: controller child serving the built-in reactive.
		"servesim-reactive-controller": reactiveControllerMain,
	})
}

// blockedWrite is the test command `blockedwrite FLAG PATH`: with
// servesim's signal handling in place, it starts writing the target FLAG
// (-o or --plot) names through servesim's output path, says "writing" on
// stdout once a first megabyte is written, and waits there for a signal.
func blockedWrite() {
	exitOnSignal(os.Stderr)
	err := writeTarget(os.Args[1], os.Args[2], func(w io.Writer) error {
		if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
			return err
		}
		fmt.Println("writing")
		time.Sleep(time.Minute) // the test sends its signal now
		return nil
	})
	fmt.Fprintln(os.Stderr, "blockedwrite: no signal came:", err)
	os.Exit(1)
}

// TestScripts runs the end-to-end scripts in testdata/script, which need
// nothing outside the repository: they run everywhere, also where the
// shared data folder is absent. Scripts see $REPO (the repository root).
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, scriptParams(t, "testdata/script", nil))
}

// TestSharedScripts runs the end-to-end scripts in testdata/script-shared,
// which read the shared data folder as $SHARED; they are skipped when it is
// absent (sharedtest.Dir decides).
func TestSharedScripts(t *testing.T) {
	t.Parallel()
	sharedDir := sharedtest.Dir(t)
	testscript.Run(t, scriptParams(t, "testdata/script-shared", map[string]string{"SHARED": sharedDir}))
}

// TestScriptsNeedNoSharedData keeps every script that reads $SHARED in
// testdata/script-shared, so that the others never skip.
func TestScriptsNeedNoSharedData(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/script/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, ref := range []string{"$SHARED", "${SHARED}"} {
			assert.False(t, strings.Contains(string(data), ref), "%s uses %s: move the case to testdata/script-shared", file, ref)
		}
	}
}

// scriptParams are the testscript parameters for the scripts in dir, with
// env added to every script's environment.
func scriptParams(t *testing.T, dir string, env map[string]string) testscript.Params {
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			for k, v := range env {
				e.Setenv(k, v)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"validjson": cmdValidJSON,
			"kind":      cmdKind,
			"perm":      cmdPerm,
			"codetrace": cmdCodeTrace,
		},
	}
}
