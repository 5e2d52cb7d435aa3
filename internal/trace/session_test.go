package trace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

// TestCSVLogSessions: a CSV log's session=COL column numbers the sessions
// in the order of their first requests; an empty field is no session; a
// row left out past --max-elapsed has none kept; a log read without the
// column has no sessions.
func TestCSVLogSessions(t *testing.T) {
	t.Parallel()
	log := "t,p,o,conv\n0,10,5,alpha\n1,10,5,beta\n2,10,5,alpha\n3,10,5,\n4,10,5,gamma\n9,10,5,beta\n"
	columns, err := ParseColumns([]string{"arrival=t", "prompt=p", "output=o", "session=conv"})
	require.NoError(t, err)
	assert.Equal(t, "conv", columns.Session)
	tr, err := Load(strings.NewReader(log), "log.csv", 5, Options{Columns: &columns})
	require.NoError(t, err)
	require.Len(t, tr.Requests, 5)
	assert.True(t, tr.HasSessions())
	type session struct {
		n  int
		ok bool
	}
	var got []session
	for i := range tr.Requests {
		n, ok := tr.Session(i)
		got = append(got, session{n, ok})
	}
	assert.Equal(t, []session{{0, true}, {1, true}, {0, true}, {0, false}, {2, true}}, got)

	plain, err := ParseColumns([]string{"arrival=t", "prompt=p", "output=o"})
	require.NoError(t, err)
	tr, err = Load(strings.NewReader(log), "log.csv", workload.NoElapsedLimit, Options{Columns: &plain})
	require.NoError(t, err)
	assert.False(t, tr.HasSessions())
	_, ok := tr.Session(0)
	assert.False(t, ok)

	missing, err := ParseColumns([]string{"arrival=t", "prompt=p", "output=o", "session=chat"})
	require.NoError(t, err)
	_, err = Load(strings.NewReader(log), "log.csv", workload.NoElapsedLimit, Options{Columns: &missing})
	assert.EqualError(t, err, `trace log.csv line 1: missing column "chat": the columns named are arrival=t, prompt=p, output=o, session=chat`)
	_, err = ParseColumns([]string{"arrival=t", "prompt=p", "output=o", "session=a", "session=b"})
	assert.EqualError(t, err, `column term "session=b": session is named twice`)

	f := Flags{Columns: []string{"arrival=t", "session=conv"}}
	assert.True(t, f.HasSessionColumn())
	assert.False(t, (&Flags{Columns: []string{"arrival=t"}}).HasSessionColumn())
}

// FuzzCSVLogSessions: naming a session column of a log changes no request
// (nor whether it loads, when the header has the column), and numbers the
// sessions densely in the order of their first requests.
func FuzzCSVLogSessions(f *testing.F) {
	for _, text := range []string{
		"t,p,o,s\n1,2,3,a\n2,2,3,b\n3,2,3,a\n",
		"s,t,p,o\n,1,2,3\nx,2,2,3\n",
		"t,p,o,s\n1,2,3\n",
		"t,p,o,s\n\"1\",2,3,\"a,b\"\n2,2,3,\"a,b\"\n",
	} {
		f.Add(text, byte(255))
	}
	f.Fuzz(func(t *testing.T, text string, limit byte) {
		plain := &Columns{Arrival: "t", Prompt: "p", Output: "o", Unit: Seconds}
		withSessions := *plain
		withSessions.Session = "s"
		want, wantErr := Load(strings.NewReader(text), "t", elapsedOf(limit), Options{Columns: plain})
		got, err := Load(strings.NewReader(text), "t", elapsedOf(limit), Options{Columns: &withSessions})
		if err != nil {
			return // a missing s column, or the error of the log without it
		}
		require.NoError(t, wantErr)
		require.Equal(t, want.Requests, got.Requests)
		require.True(t, got.HasSessions())
		next := 0
		for i := range got.Requests {
			if n, ok := got.Session(i); ok {
				require.LessOrEqual(t, n, next, "request %d", i)
				if n == next {
					next++
				}
			}
		}
	})
}
