package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLostErrorBound: the bound is the share of requests not lost yet.
func TestLostErrorBound(t *testing.T) {
	e := &LostError{Lost: 25, Total: 100, Target: 0.9}
	assert.InDelta(t, 0.75, e.Bound(), 1e-15)
	assert.Contains(t, e.Error(), "25 of 100 requests lost")
}
