package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/runparams"
)

// TestFlagNamedWordsSettingsAsFlags: a run package's error naming settings
// reads with servesim's flags, -o for the output file, and keeps its exit
// code.
func TestFlagNamedWordsSettingsAsFlags(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "--stride", flagName("stride"))
	assert.Equal(t, "--max-sim-time", flagName("max-sim-time"))
	assert.Equal(t, "-o", flagName(outputSetting))
	err := runparams.Errorf("%s %d is above %s %d", runparams.Setting("min-replicas"), 3, runparams.Setting("max-replicas"), 2)
	assert.EqualError(t, flagNamed(err), "--min-replicas 3 is above --max-replicas 2")
	late := &runparams.LateUsageError{Err: runparams.Errorf("%s %q: not a glob pattern", runparams.Setting("evaluations"), "[")}
	assert.EqualError(t, flagNamed(late), `--evaluations "[": not a glob pattern`)
	var coded codedError
	require.ErrorAs(t, flagNamed(late), &coded)
	assert.Equal(t, exitUsage, coded.ExitCode())
	plain := errors.New("trace x.csv line 3: bad")
	assert.Equal(t, plain, flagNamed(plain))
	assert.NoError(t, flagNamed(nil))
}

// TestRunSettingsAreFlags: every setting the run packages name in their
// messages (a Setting literal in their source, the plant parameters and the
// SLOs) is a flag of a servesim command, so flagName words it as a flag
// the user can give.
func TestRunSettingsAreFlags(t *testing.T) {
	t.Parallel()
	s, _, _ := testStreams("")
	flags := map[string]bool{}
	var visit func(cmd *cobra.Command)
	visit = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		for _, sub := range cmd.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd(s, nil, commands()))

	settings := map[string]string{} // setting -> where it is named
	for _, pp := range runparams.Params {
		settings[pp.Name] = "runparams.Params"
	}
	for _, slo := range runparams.SLOSettings {
		settings[string(slo.Name)] = "runparams.SLOSettings"
	}
	for _, pkg := range []string{"runparams", "simrun", "sweeprun", "capacity"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "internal", pkg, "*.go"))
		require.NoError(t, err)
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(n ast.Node) bool {
				for _, lit := range settingLiterals(n) {
					name, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					settings[name] = fset.Position(lit.Pos()).String()
				}
				return true
			})
		}
	}
	require.Contains(t, settings, "stride", "the scan finds the settings")
	require.Contains(t, settings, "gpu-memory-utilization", "and those of a []Setting list")
	for name, where := range settings {
		assert.True(t, flags[name], "setting %q (%s) is no flag of servesim: flagName words it %s", name, where, flagName(runparams.Setting(name)))
	}
}

// settingLiterals are the string literals n names as settings: the
// argument of a conversion Setting("x") or runparams.Setting("x"), the
// items of a []Setting{...} list.
func settingLiterals(n ast.Node) []*ast.BasicLit {
	isSetting := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "Setting"
		case *ast.SelectorExpr:
			return e.Sel.Name == "Setting"
		}
		return false
	}
	var lits []*ast.BasicLit
	switch n := n.(type) {
	case *ast.CallExpr:
		if len(n.Args) != 1 || !isSetting(n.Fun) {
			break
		}
		if b, ok := n.Args[0].(*ast.BasicLit); ok && b.Kind == token.STRING {
			lits = append(lits, b)
		}
	case *ast.CompositeLit:
		if at, ok := n.Type.(*ast.ArrayType); ok && isSetting(at.Elt) {
			for _, e := range n.Elts {
				if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
					lits = append(lits, b)
				}
			}
		}
	}
	return lits
}
