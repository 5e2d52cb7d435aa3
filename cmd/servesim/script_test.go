package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"servesim/internal/shared"
)

// TestMain lets the test binary act as the real servesim binary inside the
// end-to-end scripts: `exec servesim ...` runs main's code in a new process.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"servesim": func() { os.Exit(run(os.Args[1:], newStreams())) },
		// An exec: controller child serving the built-in reactive.
		"servesim-reactive-controller": reactiveControllerMain,
	})
}

// TestScripts runs the end-to-end scripts in testdata/script. Scripts see
// $SHARED (the shared data folder) and $REPO (the repository root).
func TestScripts(t *testing.T) {
	sharedDir := shared.Dir(t)
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("SHARED", sharedDir)
			env.Setenv("REPO", repo+"/../..")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"validjson": cmdValidJSON,
		},
	})
}
