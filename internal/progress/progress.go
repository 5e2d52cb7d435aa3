// Package progress draws a one-line progress bar on a terminal: a label,
// done/total, a bar, the percentage and the time left, redrawn in place.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// barWidth is the number of cells of the bar itself.
const barWidth = 30

// redrawEvery is the shortest time between two redraws; the first and the
// last state are always drawn.
const redrawEvery = 100 * time.Millisecond

// Bar is a progress line on a terminal. It is not safe for concurrent use:
// call Increment from the goroutine that collects results.
type Bar struct {
	w      io.Writer
	label  string
	unit   string
	total  int
	done   int
	start  time.Time
	drawn  time.Time
	now    func() time.Time
	shown  bool
	buffer []byte
}

// New starts a bar on w counting to total units (e.g. "runs"), drawn at once.
func New(w io.Writer, label, unit string, total int) *Bar {
	return newWithClock(w, label, unit, total, time.Now)
}

func newWithClock(w io.Writer, label, unit string, total int, now func() time.Time) *Bar {
	b := &Bar{w: w, label: label, unit: unit, total: total, now: now, start: now()}
	b.draw(b.start)
	return b
}

// Increment counts one more unit done and redraws the line if enough time
// has passed or the work is complete.
func (b *Bar) Increment() {
	b.done++
	if now := b.now(); b.done >= b.total || now.Sub(b.drawn) >= redrawEvery {
		b.draw(now)
	}
}

// Finish erases the line, leaving the terminal as it was.
func (b *Bar) Finish() {
	if b.shown {
		io.WriteString(b.w, "\r\x1b[K")
		b.shown = false
	}
}

// draw writes the line for the state at now.
func (b *Bar) draw(now time.Time) {
	b.drawn = now
	b.shown = true
	b.buffer = append(b.buffer[:0], "\r\x1b[K"...)
	b.buffer = append(b.buffer, b.line(now)...)
	b.w.Write(b.buffer)
}

// line is the text of the bar: label, counts, bar, percentage and the time
// left, estimated from the average time per unit so far.
func (b *Bar) line(now time.Time) string {
	fraction := 1.0
	if b.total > 0 {
		fraction = min(1, float64(b.done)/float64(b.total))
	}
	filled := int(fraction * barWidth)
	bar := strings.Repeat("=", filled)
	if filled < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-filled-1)
	}
	left := "?"
	if b.done > 0 {
		elapsed := now.Sub(b.start)
		remaining := time.Duration(float64(elapsed) / float64(b.done) * float64(max(0, b.total-b.done)))
		left = remaining.Round(time.Second).String()
	}
	return fmt.Sprintf("%s %d/%d %s [%s] %3d%% eta %s", b.label, b.done, b.total, b.unit, bar, int(fraction*100), left)
}
