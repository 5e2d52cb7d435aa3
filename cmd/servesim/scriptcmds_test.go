package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"

	"servesim/internal/plant"
)

// cmdCodeTrace is the script command `codetrace FILE`: FILE gets the
// synthetic code-like trace (seed 2023, one hour) as an Azure CSV, a
// bursty load that one embedded-proxy GPU cannot serve (the embedded
// default trace is deliberately light).
func cmdCodeTrace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: codetrace FILE")
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(plant.CodeTraceLike(plant.DefaultTraceSeed, 3600).WriteCSV(f))
	ts.Check(f.Close())
}

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

// kinds names the kinds of file the script command kind tells apart.
var kinds = map[string]fs.FileMode{
	"file":     0,
	"folder":   fs.ModeDir,
	"symlink":  fs.ModeSymlink,
	"fifo":     fs.ModeNamedPipe,
	"socket":   fs.ModeSocket,
	"chardev":  fs.ModeDevice | fs.ModeCharDevice,
	"blockdev": fs.ModeDevice,
}

// cmdKind is the script command `kind PATH KIND`: PATH itself (a link is
// not followed) is a KIND: file, folder, symlink, fifo, socket, chardev or
// blockdev.
func cmdKind(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: kind PATH file|folder|symlink|fifo|socket|chardev|blockdev")
	}
	want, ok := kinds[args[1]]
	if !ok {
		ts.Fatalf("kind: unknown kind %q", args[1])
	}
	info, err := os.Lstat(ts.MkAbs(args[0]))
	ts.Check(err)
	switch got := info.Mode() & fs.ModeType; {
	case neg && got == want:
		ts.Fatalf("%s is a %s", args[0], args[1])
	case !neg && got != want:
		ts.Fatalf("%s is %v, not a %s", args[0], info.Mode(), args[1])
	}
}

// cmdPerm is the script command `perm PATH MODE`: the file PATH names (a
// link is followed) has the permission bits MODE, in octal (0600).
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm PATH MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	info, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	switch got := info.Mode().Perm(); {
	case neg && got == fs.FileMode(want):
		ts.Fatalf("%s has mode %#o", args[0], got)
	case !neg && got != fs.FileMode(want):
		ts.Fatalf("%s has mode %#o, not %#o", args[0], got, want)
	}
}
