package benchload

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadShareGPT(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "sharegpt.json"))
	require.NoError(t, err)
	got, err := ReadShareGPT("sharegpt.json", data)
	require.NoError(t, err)
	assert.Equal(t, []Sample{{13, 23}, {1, 8}, {11, 20}}, got, "entries of two turns or more, the first two turns estimated")
}

func TestReadShareGPTErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, want string
	}{
		{"not a list", `{"conversations": []}`, "dataset f.json line 1: expected a JSON list of conversations"},
		{"entry not an object", "[\n  3\n]", `dataset f.json line 2: expected an object with "conversations"`},
		{"conversations not a list", "[\n{\"conversations\": 1}]", `dataset f.json line 2: "conversations": expected a list of turns`},
		{"turn without value", "[{\"conversations\": [{\"value\": \"a\"},\n {\"from\": \"gpt\"}]},\n{\"conversations\": [{\"from\": \"x\"}, {}]}]",
			`dataset f.json line 1: "conversations" turn 1: expected an object with a string "value"`},
		{"value not a string", `[{"conversations": [{"value": "a"}, {"value": null}]}]`, `line 1: "conversations" turn 1: expected an object with a string "value"`},
		{"syntax", "[\n{\"conversations\": [}\n]", "dataset f.json line 2: invalid JSON"},
		{"truncated", "[\n{\"conversations\": [", "dataset f.json line 2: invalid JSON: unexpected end of file"},
		{"extra data", "[]\n[]", "dataset f.json line 2: extra data after the list"},
		{"empty", "", "dataset f.json line 1: invalid JSON: unexpected end of file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadShareGPT("f.json", []byte(tt.data))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestReadCustom(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "custom.jsonl"))
	require.NoError(t, err)
	got, err := ReadCustom("custom.jsonl", data)
	require.NoError(t, err)
	assert.Equal(t, []Sample{{8, 0}, {12, 64}, {900, 7}}, got, "blank lines skipped; 0: no output_tokens")
}

func TestReadCustomErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, want string
	}{
		{"not JSON", "{\"prompt\": \"a\"}\nnope\n", "dataset c.jsonl line 2: expected a JSON object"},
		{"no prompt", `{"text": "a"}`, `dataset c.jsonl line 1: expected a string "prompt"`},
		{"null prompt", `{"prompt": null}`, `line 1: expected a string "prompt"`},
		{"fractional output", "\n{\"prompt\": \"abc\", \"output_tokens\": 2.5}", `dataset c.jsonl line 2: "output_tokens" "2.5": expected a whole number of at least 1`},
		{"zero prompt tokens", `{"prompt": "abc", "prompt_tokens": 0}`, `"prompt_tokens" "0": expected a whole number of at least 1`},
		{"string tokens", `{"prompt": "abc", "output_tokens": "5"}`, `"output_tokens" "\"5\"": expected a whole number`},
		{"empty prompt", `{"prompt": ""}`, `line 1: "prompt" is empty: give "prompt_tokens" or a prompt`},
		{"no lines", "\n\n", `dataset c.jsonl: no lines: expected JSON Lines with a "prompt" field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCustom("c.jsonl", []byte(tt.data))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestValidSequenceIsVLLMsFilter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s     Sample
		fixed bool
		want  bool
	}{
		{Sample{4, 4}, false, true},
		{Sample{3, 100}, false, false},   // prompt too short
		{Sample{100, 3}, false, false},   // output too short
		{Sample{100, 3}, true, true},     // --sharegpt-output-len lifts the output minimum
		{Sample{1025, 10}, false, false}, // prompt too long
		{Sample{1024, 1024}, false, true},
		{Sample{1024, 1025}, false, false}, // too long in all
	} {
		assert.Equal(t, tt.want, ValidSequence(tt.s, tt.fixed), "%+v fixed=%v", tt.s, tt.fixed)
	}
}

func FuzzReadShareGPT(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "sharegpt.json")); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`[{"conversations": [{"value": "a"}, {"value": "b"}]}, 3]`))
	f.Add([]byte("[\n{\"conversations\": ["))
	f.Fuzz(func(t *testing.T, data []byte) {
		samples, err := ReadShareGPT("f.json", data)
		if err != nil {
			assert.Regexp(t, `^dataset f\.json( line [0-9]+)?: `, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		for _, s := range samples {
			assert.GreaterOrEqual(t, s.PromptTokens, 0)
			assert.GreaterOrEqual(t, s.OutputTokens, 0)
		}
	})
}

func FuzzReadCustom(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "custom.jsonl")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("{\"prompt\": \"a\", \"prompt_tokens\": 9, \"output_tokens\": 1}\n\n{\"prompt\": 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		samples, err := ReadCustom("c.jsonl", data)
		if err != nil {
			assert.Regexp(t, `^dataset c\.jsonl( line [0-9]+)?: `, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		require.NotEmpty(t, samples)
		for _, s := range samples {
			assert.GreaterOrEqual(t, s.PromptTokens, 1)
			assert.GreaterOrEqual(t, s.OutputTokens, 0)
		}
	})
}
