package scenario

import (
	"testing"

	"github.com/stretchr/testify/require"

	"servesim/internal/figure/figuretest"
)

func TestScenariosFigure(t *testing.T) {
	report, err := DefaultReport()
	require.NoError(t, err)
	figuretest.RequirePanelsDrawn(t, report.Figure(), 14*96, 5*96, 2000)
}
