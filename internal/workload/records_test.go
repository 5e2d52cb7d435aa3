package workload

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"servesim/internal/pycompat"
)

// recordLine is one record and the line it starts on.
type recordLine struct {
	Fields []string
	Line   int
}

// drainRecords reads text with a records reader, fed in pieces of at most
// chunk bytes, to its end or its first error.
func drainRecords(text string, chunk int) ([]recordLine, error) {
	r := newRecords(iotest.HalfReader(strings.NewReader(text)), "t.csv")
	if chunk > 0 {
		r = newRecords(&pieces{s: text, n: chunk}, "t.csv")
	}
	var out []recordLine
	for {
		fields, line, err := r.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		strs := make([]string, len(fields))
		for i, f := range fields {
			strs[i] = string(f)
		}
		out = append(out, recordLine{strs, line})
	}
}

// pieces reads s n bytes at a time.
type pieces struct {
	s string
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.n)], p.s)
	p.s = p.s[n:]
	return n, nil
}

// pyReference reads text whole with pycompat's port of Python's csv module
// alone.
func pyReference(text string) ([]recordLine, error) {
	r := pycompat.NewCSVReader([]byte(text))
	var out []recordLine
	for {
		if err := r.Read(); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, recordLine{r.Strings(), r.RecordLine})
	}
}

func TestNeedsQuotingRules(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"", false},
		{"a,b\r\n", false},
		{"a,b\n", false},
		{"a,b", false},
		{"1,2\r", false},
		{"\r\n", false},
		{"a,\"b\"\n", true},
		{"a,b\r1,2\n", true},
		{"a,b\r\r\n", true},
		{"\r\r", true},
	} {
		assert.Equal(t, tc.want, needsQuotingRules([]byte(tc.line)), "%q", tc.line)
	}
}

// TestRecordsReadLikePython: plain texts, texts that turn to the quoting
// rules on their way, and errors, fed in any pieces, read as Python's csv
// module reads them whole.
func TestRecordsReadLikePython(t *testing.T) {
	for _, text := range []string{
		"TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n",
		"a,b\n\n1,2\n\r\n3,4,\n,\n5",
		"a,b\r\n1,2\r",
		" a , b \n\t1,2\n",
		"",
		"\n\n",
		"x",
		"a,b\n1,2\n\"3\n4\",5\n6,7\n",
		"a,b\n1,2\r3,4\n5,6\n",
		"a,b\n\"12\"3,4\n",
		"a,b\n1,\"unterminated\n2,3\n",
		"a,b\n1," + strings.Repeat("x", pycompat.CSVFieldLimit+1) + "\n",
		"a,b\n\"" + strings.Repeat("x", pycompat.CSVFieldLimit+1) + "\"\n",
	} {
		want, wantErr := pyReference(text)
		for _, chunk := range []int{0, 1, 7} {
			got, err := drainRecords(text, chunk)
			assert.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(err), "%q in pieces of %d", text, chunk)
			assert.Equal(t, want, got, "%q in pieces of %d", text, chunk)
		}
	}
}

// TestRecordsRefuseTextThatIsNotUTF8: the first invalid byte is named by
// its line and offset, on the plain path and after the turn to the quoting
// rules.
func TestRecordsRefuseTextThatIsNotUTF8(t *testing.T) {
	for text, want := range map[string]string{
		"a,b\n1,\xff\n":               "trace t.csv line 2: byte 6 is not UTF-8: expected a UTF-8 text",
		"a,b\n\"1\",2\n3,4\n\xfe,5\n": "trace t.csv line 4: byte 14 is not UTF-8: expected a UTF-8 text",
	} {
		_, err := drainRecords(text, 0)
		assert.EqualError(t, err, want, "%q", text)
	}
}

// FuzzRecords checks that the records reader reads every UTF-8 text
// exactly as Python's csv module (pycompat) reads it whole: same records,
// same lines, the same error.
func FuzzRecords(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n", 3)
	f.Add("a,b\n\n1,2\n\r\n3,4,\n,\n5\r", 1)
	f.Add("a\"b\n", 2)
	f.Add("a,b\n1,2\r3,\"4\n5\"\n", 5)
	f.Add("a,b\n"+strings.Repeat("é", pycompat.CSVFieldLimit)+",1\n", 4096)
	f.Fuzz(func(t *testing.T, text string, chunk int) {
		if !utf8.ValidString(text) || chunk < 1 {
			return
		}
		want, wantErr := pyReference(text)
		got, gotErr := drainRecords(text, chunk)
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Fatalf("%q: Python's csv module fails with %v, records with %v", text, wantErr, gotErr)
		}
		if !slices.EqualFunc(want, got, func(a, b recordLine) bool {
			return a.Line == b.Line && slices.Equal(a.Fields, b.Fields)
		}) {
			t.Fatalf("%q: Python's csv module %v, records %v", text, want, got)
		}
	})
}
