package plant

import (
	"encoding/csv"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordLine is one record and the line it starts on.
type recordLine struct {
	Fields []string
	Line   int
}

// readRecords drains r.
func readRecords(t testing.TB, r recordReader) []recordLine {
	var out []recordLine
	for {
		fields, line, err := r.next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, recordLine{slices.Clone(fields), line})
	}
}

// csvReference reads text with encoding/csv alone, as newRecordReader's
// fallback does.
func csvReference(text string) recordReader {
	reader := csv.NewReader(strings.NewReader(text))
	reader.FieldsPerRecord = -1
	reader.LazyQuotes = true
	reader.ReuseRecord = true
	return csvRecords{reader}
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

func TestPlainRecordsReadLikeEncodingCSV(t *testing.T) {
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
		assert.Equal(t, readRecords(t, csvReference(text)), got, "%q", text)
	}
}

// FuzzPlainRecords checks that the in-place splitter reads every text it
// accepts exactly as encoding/csv does: same fields, same lines.
func FuzzPlainRecords(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n")
	f.Add("a,b\n\n1,2\n\r\n3,4,\n,\n5\r")
	f.Add("a\"b\n")
	f.Fuzz(func(t *testing.T, text string) {
		if !plainCSV(text) {
			return
		}
		want := readRecords(t, csvReference(text))
		got := readRecords(t, &plainRecords{text: text})
		if !slices.EqualFunc(want, got, func(a, b recordLine) bool {
			return a.Line == b.Line && slices.Equal(a.Fields, b.Fields)
		}) {
			t.Fatalf("%q: encoding/csv %v, plain %v", text, want, got)
		}
	})
}
