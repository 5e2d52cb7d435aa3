package plant

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/pycompat"
)

// recordLine is one record and the line it starts on.
type recordLine struct {
	Fields []string
	Line   int
}

// readRecords drains r, which must not fail.
func readRecords(t testing.TB, r recordReader) []recordLine {
	out, err := drain(r)
	require.NoError(t, err)
	return out
}

// drain reads r to its end or its first error.
func drain(r recordReader) ([]recordLine, error) {
	var out []recordLine
	for {
		fields, line, err := r.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, recordLine{append([]string{}, fields...), line})
	}
}

// pyReference reads text with pycompat's port of Python's csv module
// alone, as newRecordReader's fallback does.
func pyReference(text string) recordReader {
	return &pyRecords{reader: pycompat.NewCSVReader([]byte(text))}
}

func TestPlainCSV(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"", true},
		{"a,b\r\n1,2\r\n", true},
		{"a,b\n1,2", true},
		{"a,b\n1,2\r", true},
		{"a,b\r\n\r\n1,2\r\n", true},
		{"a,\"b\"\n", false},
		{"a,b\r1,2\n", false},
		{"a,b\r\r\n", false},
		{"\r", true},
		{"\r\r", false},
	} {
		assert.Equal(t, tc.want, plainCSV(tc.text), "%q", tc.text)
	}
}

func TestPlainRecordsReadLikePython(t *testing.T) {
	for _, text := range []string{
		"TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n",
		"a,b\n\n1,2\n\r\n3,4,\n,\n5",
		"a,b\r\n1,2\r",
		" a , b \n\t1,2\n",
		"",
		"\n\n",
		"x",
	} {
		require.True(t, plainCSV(text))
		got := readRecords(t, newRecordReader(text))
		assert.Equal(t, readRecords(t, pyReference(text)), got, "%q", text)
	}
}

// FuzzPlainRecords checks that the in-place splitter reads every UTF-8
// text it accepts exactly as Python's csv module (pycompat) does: same
// records, same lines, the same error.
func FuzzPlainRecords(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n")
	f.Add("a,b\n\n1,2\n\r\n3,4,\n,\n5\r")
	f.Add("a\"b\n")
	f.Add("a,b\n" + strings.Repeat("é", pycompat.CSVFieldLimit) + ",1\n")
	f.Fuzz(func(t *testing.T, text string) {
		if !plainCSV(text) || !utf8.ValidString(text) {
			return
		}
		want, wantErr := drain(pyReference(text))
		got, gotErr := drain(&plainRecords{text: text})
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Fatalf("%q: Python's csv module fails with %v, plain with %v", text, wantErr, gotErr)
		}
		if !slices.EqualFunc(want, got, func(a, b recordLine) bool {
			return a.Line == b.Line && slices.Equal(a.Fields, b.Fields)
		}) {
			t.Fatalf("%q: Python's csv module %v, plain %v", text, want, got)
		}
	})
}
