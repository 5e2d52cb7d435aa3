package workload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadWorkloadReturnsTraceErrors(t *testing.T) {
	body := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,10,-3\n"
	_, err := LoadWorkload(strings.NewReader(body), "code.csv", NoElapsedLimit)
	var te *TraceError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, TraceError{File: "code.csv", Line: 2, Column: "GeneratedTokens", Value: "-3", Why: "token counts must be positive"}, *te)
	assert.EqualError(t, err, `trace code.csv line 2: GeneratedTokens "-3": token counts must be positive`)

	_, err = LoadWorkload(strings.NewReader("a,b\n1,2\n"), "x.csv", NoElapsedLimit)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 1, te.Line)
	assert.Empty(t, te.Column)
}
