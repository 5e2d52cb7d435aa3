package main

import (
	"os/exec"
	"slices"
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

// Layers of the module (docs/ARCHITECTURE.md): cmd/servesim on top, the
// run packages (a command's flags turned into a run) under it, the domain
// packages under them, the helpers at the bottom, and test helpers beside
// them. Imports only go down.
var (
	helperPackages = []string{
		"internal/pycompat", "internal/jsonout", "internal/numeric", "internal/limits",
		"internal/figure", "internal/texttable", "internal/progress", "internal/outfile", "internal/cliflag", "internal/interrupt",
		"internal/execsession", "internal/scenario/pyrand",
	}
	domainPackages = []string{
		"internal/profile", "internal/plant", "internal/plant/mpc", "internal/fleet", "internal/trace", "internal/sweep",
		"internal/diagnose", "internal/scenario", "internal/reqlog", "internal/vllmbench", "internal/cards",
		"internal/benchload", "internal/calibrate", "internal/workload",
	}
	runPackages  = []string{"internal/simrun", "internal/sweeprun", "internal/capacity", "internal/runparams", "internal/plantflag"}
	testPackages = []string{
		"internal/sharedtest", "internal/paritytest", "internal/profile/profiletest",
		"internal/figure/figuretest", "internal/plant/exectest", "internal/testsupport",
	}
)

// The run layer is headless but for plantflag, the cobra binding: its
// packages name settings (runparams.Setting) and the command names them as
// its flags, so none depends on the command line, not even through another
// package.
var (
	headlessPackages    = []string{"internal/simrun", "internal/sweeprun", "internal/capacity", "internal/runparams"}
	commandLinePackages = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "servesim/internal/plantflag", "servesim/internal/cliflag"}
)

// The workload readers read traces without the simulator: they take the
// request and workload types from internal/workload and depend on
// internal/plant neither directly nor through another package.
var simulatorFreePackages = []string{"internal/workload", "internal/trace", "internal/scenario", "internal/benchload"}

// TestPackageLayers keeps the import direction of docs/ARCHITECTURE.md: no
// package imports a command; a helper (Python reading rules, the JSON
// encoder, numerics, caps, drawing, tables, output files) imports no
// domain package; the binary links no test helper; and the run layer but
// plantflag is headless: no cobra, pflag, plantflag or cliflag, directly
// or through another package; and the workload readers do without the
// simulator.
func TestPackageLayers(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the test lists the packages with the go command")
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "servesim/...").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	deps := map[string][]string{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		deps[strings.TrimPrefix(fields[0], "servesim/")] = fields[1:]
	}
	for _, layer := range [][]string{helperPackages, domainPackages, runPackages, testPackages} {
		for _, pkg := range layer {
			require.Contains(t, deps, pkg, "the layer lists a package that exists")
		}
	}
	for pkg := range deps {
		known := slices.Contains(helperPackages, pkg) || slices.Contains(domainPackages, pkg) || slices.Contains(runPackages, pkg) ||
			slices.Contains(testPackages, pkg) || pkg == "cmd/servesim"
		assert.True(t, known, "%s is in no layer: add it to docs/ARCHITECTURE.md and to this test", pkg)
	}
	imports := func(pkg, dep string) bool { return slices.Contains(deps[pkg], "servesim/"+dep) }
	for pkg := range deps {
		assert.False(t, imports(pkg, "cmd/servesim"), "%s imports the command", pkg)
	}
	for _, helper := range helperPackages {
		for _, upper := range append(slices.Clone(domainPackages), runPackages...) {
			assert.False(t, imports(helper, upper), "helper %s imports %s", helper, upper)
		}
	}
	for _, domain := range domainPackages {
		for _, r := range runPackages {
			assert.False(t, imports(domain, r), "domain package %s imports run package %s", domain, r)
		}
	}
	for _, test := range testPackages {
		assert.False(t, imports("cmd/servesim", test), "the binary links test helper %s", test)
	}
	for _, pkg := range simulatorFreePackages {
		require.Contains(t, domainPackages, pkg, "a workload reader is a domain package")
		assert.False(t, imports(pkg, "internal/plant"), "%s depends on the simulator (internal/plant): take the workload types from internal/workload", pkg)
	}
	for _, pkg := range headlessPackages {
		require.Contains(t, runPackages, pkg, "a headless package is a run package")
		for _, cli := range commandLinePackages {
			assert.False(t, slices.Contains(deps[pkg], cli), "run package %s depends on %s: it names settings (runparams), and cmd names them as flags", pkg, cli)
		}
	}
}
