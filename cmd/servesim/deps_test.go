package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoSlowInitPackages keeps out of the binary the packages whose init
// costs every command start-up time it cannot skip.
func TestNoSlowInitPackages(t *testing.T) {
	t.Parallel()
	slow := map[string]string{
		"gonum.org/v1/plot": "its init parses all twelve Liberation fonts (about 3.5 ms of every command's start-up); " +
			"internal/figure draws with gonum.org/v1/plot/vg and parses fonts only when it renders",
		"gonum.org/v1/plot/plotter": "it imports gonum.org/v1/plot, whose init parses all twelve Liberation fonts " +
			"(about 3.5 ms of every command's start-up)",
	}
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the test lists the binary's packages with the go command")
	out, err := exec.Command(goTool, "list", "-deps", "servesim/cmd/servesim").CombinedOutput()
	require.NoError(t, err, "go list -deps: %s", out)
	deps := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Contains(t, deps, "gonum.org/v1/plot/vg/draw", "the list names the drawing packages the binary does link")
	for _, dep := range deps {
		why, bad := slow[dep]
		assert.False(t, bad, "servesim links %s: %s", dep, why)
	}
}
