package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock advances by step at every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

// lines splits what a bar wrote into the lines it drew.
func lines(out string) []string {
	var drawn []string
	for _, part := range strings.Split(out, "\r\x1b[K") {
		if part != "" {
			drawn = append(drawn, part)
		}
	}
	return drawn
}

// countTo counts a bar to total on a clock that advances by step at every
// reading, and returns the bar, what it wrote and the lines it drew.
func countTo(total int, step time.Duration) (*Bar, *bytes.Buffer, []string) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0), step: step}
	b := newWithClock(&out, "sweep", "runs", total, clock.now)
	for range total {
		b.Increment()
	}
	return b, &out, lines(out.String())
}

func TestBarDrawsCountsPercentageAndTimeLeft(t *testing.T) {
	b, out, drawn := countTo(4, time.Second)
	require.Len(t, drawn, 5, "the start and every increment a second apart")
	assert.Equal(t, "sweep 0/4 runs [>                             ]   0% eta ?", drawn[0])
	assert.Equal(t, "sweep 1/4 runs [=======>                      ]  25% eta 3s", drawn[1])
	assert.Equal(t, "sweep 2/4 runs [===============>              ]  50% eta 2s", drawn[2])
	assert.Equal(t, "sweep 4/4 runs [==============================] 100% eta 0s", drawn[4])

	b.Finish()
	assert.True(t, strings.HasSuffix(out.String(), "\r\x1b[K"), "the line is erased at the end")
}

func TestBarRedrawsAtMostEveryTenthOfASecondButAlwaysTheEnd(t *testing.T) {
	_, _, drawn := countTo(1000, time.Millisecond)
	assert.Less(t, len(drawn), 15, "1000 increments in a second draw about ten times")
	assert.Contains(t, drawn[len(drawn)-1], "1000/1000 runs")
}

func TestEmptyBarIsComplete(t *testing.T) {
	var out bytes.Buffer
	b := New(&out, "sweep", "runs", 0)
	b.Finish()
	assert.Contains(t, out.String(), "sweep 0/0 runs [==============================] 100%")
}

func TestFinishWithoutDrawingWritesNothingMore(t *testing.T) {
	var out bytes.Buffer
	b := New(&out, "x", "u", 2)
	b.Finish()
	n := out.Len()
	b.Finish()
	assert.Equal(t, n, out.Len(), "a second Finish writes nothing")
}
