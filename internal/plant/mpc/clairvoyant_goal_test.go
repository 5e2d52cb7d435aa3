package mpc_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClairvoyantReachesMPC checks that the clairvoyant bound reaches
// mpc's attainment (within goal 2's half point) on cases of the goal table
// where it ended 1.2 to 2.4 points below it: it judged a request it
// followed one by one only once the rollout admitted it (a plan delaying
// prefills past the horizon hid their misses), and judged TPOT by whether
// a known output met it at the block's mean share (every plan missing
// every request in a burst, so the slowest looked as good).
func TestClairvoyantReachesMPC(t *testing.T) {
	cases := goalCases(t, regexp.MustCompile(`^(code/l4/light/relaxed|conv/proxy/light/tight)$`))
	assert.Len(t, cases, 2)
	for _, c := range cases {
		runs := runAll(t, c, []string{"mpc", "mpc-clairvoyant"})
		assert.GreaterOrEqual(t, runs["mpc-clairvoyant"].attainment, runs["mpc"].attainment-reachesWithin, c.name())
	}
}
