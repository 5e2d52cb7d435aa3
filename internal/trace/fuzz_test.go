package trace

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/workload"
)

// addSeeds adds the test data files and texts as seeds.
func addSeeds(f *testing.F, files []string, texts ...string) {
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		texts = append(texts, string(data))
	}
	for _, text := range texts {
		f.Add(text)
	}
}

// errLine is the line an error message names, 0 when it names none.
func errLine(err error) int {
	m := regexp.MustCompile(`^trace [^ ]* line ([0-9]+):`).FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// sameAsReference checks a reader's outcome against its reference path's:
// both fail at the same line, or both give the same requests, skip counts
// and hash ids.
func sameAsReference(t *testing.T, text string, got *Trace, err error, want refResult) {
	t.Helper()
	if want.err != nil {
		require.Error(t, err, "the reference fails (%v) at line %d", want.err, want.errLine)
		assert.Equal(t, want.errLine, errLine(err), "the reference fails (%v) at line %d; the reader: %v", want.err, want.errLine, err)
		assert.NotContains(t, err.Error(), "\n")
		return
	}
	require.NoError(t, err)
	assert.Equal(t, want.requests, got.Requests)
	assert.Equal(t, want.skipped, got.Skipped)
	if want.hashIDs != nil {
		for i := range got.Requests {
			assert.Equal(t, len(want.hashIDs[i]), len(got.HashIDs(i)), "request %d", i)
			if len(want.hashIDs[i]) > 0 {
				assert.Equal(t, want.hashIDs[i], got.HashIDs(i), "request %d", i)
			}
		}
	}
	roundTrip(t, got)
}

// roundTrip converts a loaded trace to each canonical form and reads it
// back: the same requests (and hash ids, through mooncake).
func roundTrip(t *testing.T, tr *Trace) {
	t.Helper()
	for _, format := range ConvertFormats {
		var buf bytes.Buffer
		require.NoError(t, Convert(&buf, tr, format))
		back, err := Load(&buf, "converted", workload.NoElapsedLimit, Options{Format: format})
		require.NoError(t, err, "%s:\n%s", format, buf.String())
		assert.Equal(t, tr.Requests, back.Requests, format)
		if format == Mooncake {
			for i := range tr.Requests {
				assert.Equal(t, len(tr.HashIDs(i)), len(back.HashIDs(i)))
			}
		}
	}
}

// elapsedOf turns a fuzzed byte into an elapsed-time limit: none, or 0 to
// 254 s.
func elapsedOf(limit byte) float64 {
	if limit == 255 {
		return workload.NoElapsedLimit
	}
	return float64(limit)
}

const burstHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"

func FuzzBurstGPT(f *testing.F) {
	for _, text := range []string{
		burstHeader + "1,a,1,1,2,b\n2,a,0,0,0,b\n",
		burstHeader + "1,GPT-4,1,1,2,API log\n2,\"GPT-4\",3,4,7,\"API\nlog\"\n",
		burstHeader + "10,a,1,1,2,b\n5,a,1,1,2,b\n",
		burstHeader + "1,a,-1,1,2,b\n",
		burstHeader + "1,a\"b,1,1,2,b\n",
		burstHeader + " 1e0 , a , +1 , 2 ,x\r\n.5e1,a,1,1\n",
		"Timestamp,Request tokens,Response tokens,Model\n1,1,1\n2,1,1,GPT-4\n",
	} {
		for _, model := range []string{"", "GPT-4"} {
			f.Add(text, model, byte(255))
			f.Add(text, model, byte(0))
		}
	}
	data, err := os.ReadFile(filepath.Join("testdata", "burstgpt.csv"))
	require.NoError(f, err)
	f.Add(string(data), "GPT-4", byte(100))
	f.Fuzz(func(t *testing.T, text, model string, limit byte) {
		var filter Filter
		if model != "" {
			filter.Models = []string{model}
		}
		got, err := Load(io.MultiReader(strings.NewReader(text)), "t", elapsedOf(limit), Options{Format: BurstGPT, Filter: filter})
		want := refCSV(text, [5]string{"Timestamp", "Request tokens", "Response tokens", "Model", "Log Type"}, Seconds, filter, true, elapsedOf(limit))
		sameAsReference(t, text, got, err, want)
	})
}

func FuzzCSVLog(f *testing.F) {
	for _, text := range []string{
		"t,p,o\n1,2,3\n",
		"o,p,t\n3,2,1\n4,5,2.5\n",
		"t,p,o\n2024-05-10 00:00:00.009930+00:00,1,1\n2024-05-10 00:00:01+00:00,1,1\n",
		"t,p,o\n2024-05-10 00:00:00,1,1\n2024-05-10 00:00:01+00:00,1,1\n",
		"t,p,o\n1,0,1\n",
		"t,p,o\n\"1\",\"2\",\"3\"\n",
		"t,p,o\n1,2\n",
	} {
		for _, unit := range []byte{0, 1, 2, 3} {
			f.Add(text, unit, byte(255))
		}
	}
	f.Fuzz(func(t *testing.T, text string, unitIndex, limit byte) {
		unit := TimeUnits[int(unitIndex)%len(TimeUnits)]
		cols := &Columns{Arrival: "t", Prompt: "p", Output: "o", Unit: unit}
		got, err := Load(strings.NewReader(text), "t", elapsedOf(limit), Options{Columns: cols})
		want := refCSV(text, [5]string{"t", "p", "o"}, unit, Filter{}, false, elapsedOf(limit))
		sameAsReference(t, text, got, err, want)
	})
}

func FuzzMooncake(f *testing.F) {
	addSeeds(f, []string{"mooncake.jsonl"},
		`{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1, 2]}`,
		"{\"timestamp\":1,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":0.5,\"input_length\":1,\"output_length\":1}\n",
		`{"timestamp":1,"input_length":12.5,"output_length":1}`,
		`{"timestamp":"1","input_length":1,"output_length":1}`,
		`{"timestamp":1,"input_length":1,"output_length":1,"hash_ids":null}`,
		`{"timestamp":1,"input_length":1,"output_length":1,"hash_ids":[1,[2]]}`,
		`{"t\u0069mestamp":1,"input_length":1,"output_length":1,"x":{"y":[true,false,null,"\"\\\/\b\f\n\r\t\u00e9"]}}`,
		`{"timestamp":1,"input_length":1,"output_length":1,"timestamp":-2e-3}`,
		" \t{\"timestamp\":1e2,\"input_length\":1,\"output_length\":1} \r\n\r\n",
		`{"timestamp":1,"input_length":1,"output_length":1,"s":"a`+"\x01"+`"}`,
		`{"timestamp":01,"input_length":1,"output_length":1}`,
		`null`,
		strings.Repeat("[", 10001),
		// encoding/json's nesting limit: 10000 levels, the line's object included.
		`{"timestamp":1,"input_length":1,"output_length":1,"x":`+strings.Repeat("[", 9999)+strings.Repeat("]", 9999)+"}",
		`{"timestamp":1,"input_length":1,"output_length":1,"x":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+"}",
	)
	f.Fuzz(func(t *testing.T, text string) {
		got, err := Load(strings.NewReader(text), "t", workload.NoElapsedLimit, Options{Format: Mooncake})
		sameAsReference(t, text, got, err, refMooncake(text, workload.NoElapsedLimit))
	})
}

// FuzzAzure checks that the Azure format is workload.LoadWorkload's, read
// through the same caps.
func FuzzAzure(f *testing.F) {
	addSeeds(f, []string{"azure2023.csv", "azure2024.csv"},
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1\n2023-11-16 18:17:02,1,1\n",
		"TIMESTAMP,ContextTokens\n", "")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := Load(strings.NewReader(text), "t", 1000, Options{Format: Azure})
		want, wantErr := workload.LoadWorkload(strings.NewReader(text), "t", 1000)
		if wantErr != nil {
			assert.EqualError(t, err, wantErr.Error())
			return
		}
		require.NoError(t, err)
		assert.Equal(t, want, got.Workload)
		roundTrip(t, got)
	})
}

// FuzzDetect checks that a detected format reads as the same format
// forced, and that anything else fails naming the formats tried.
func FuzzDetect(f *testing.F) {
	addSeeds(f, []string{"azure2023.csv", "azure2024.csv", "burstgpt.csv", "mooncake.jsonl", "gateway.csv"},
		"\n\r\n  {", "a,b", "\"TIMESTAMP\",ContextTokens,GeneratedTokens\n", "Timestamp,Request tokens,Response tokens\n1,1,1\n")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := Load(strings.NewReader(text), "t", workload.NoElapsedLimit, Options{})
		for _, format := range []Format{Azure, BurstGPT, Mooncake} {
			forced, forcedErr := Load(strings.NewReader(text), "t", workload.NoElapsedLimit, Options{Format: format})
			if err == nil && got.Format == format {
				require.NoError(t, forcedErr)
				assert.Equal(t, forced, got)
				return
			}
			if err != nil && forcedErr != nil && err.Error() == forcedErr.Error() {
				return // detected as this format, and failed as it
			}
		}
		require.Error(t, err, "detected as %v", got)
		msg := err.Error()
		assert.True(t, strings.Contains(msg, "not a trace format servesim knows") || strings.Contains(msg, "empty") ||
			strings.Contains(msg, "NUL"), msg)
	})
}
