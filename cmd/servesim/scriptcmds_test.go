package main

import (
	"encoding/json"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdValidJSON is the script command `validjson FILE`: FILE (stdout for the
// last command's output) must hold exactly one valid JSON document.
func cmdValidJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: validjson FILE")
	}
	data := ts.ReadFile(args[0])
	var v any
	err := json.Unmarshal([]byte(data), &v)
	switch {
	case neg && err == nil:
		ts.Fatalf("%s is valid JSON", args[0])
	case !neg && err != nil:
		ts.Fatalf("%s is not valid JSON: %v", args[0], err)
	}
}
