package benchload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"servesim/internal/limits"
)

// ReadShareGPT reads a ShareGPT file (data, read from name): a JSON list
// of entries, each an object whose "conversations" list holds turns
// {"from": ..., "value": TEXT}. As vLLM's ShareGPTDataset, an entry
// without "conversations" or with fewer than two turns is left out, and
// of the others the first turn is the prompt and the second the
// completion; each Sample holds their EstimateTokens. Errors name the
// file and the line of the entry.
func ReadShareGPT(name string, data []byte) ([]Sample, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	lines := lineCounter{data: data}
	fail := func(offset int64, format string, args ...any) error {
		return fmt.Errorf("dataset %s line %d: %s", name, lines.at(offset), fmt.Sprintf(format, args...))
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		if err != nil {
			return nil, syntaxError(name, &lines, err)
		}
		return nil, fail(0, "expected a JSON list of conversations")
	}
	var samples []Sample
	for dec.More() {
		start := dec.InputOffset()
		var entry json.RawMessage
		if err := dec.Decode(&entry); err != nil {
			return nil, syntaxError(name, &lines, err)
		}
		start += int64(bytes.Index(data[start:], entry[:1])) // past the comma and spaces
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(entry, &fields); err != nil {
			return nil, fail(start, "expected an object with \"conversations\"")
		}
		raw, ok := fields["conversations"]
		if !ok {
			continue
		}
		var turns []json.RawMessage
		if err := json.Unmarshal(raw, &turns); err != nil {
			return nil, fail(start, "\"conversations\": expected a list of turns")
		}
		if len(turns) < 2 {
			continue
		}
		var texts [2]string
		for k := range texts {
			var turn map[string]json.RawMessage
			_ = json.Unmarshal(turns[k], &turn) // not an object: no "value" below
			text, ok := jsonString(turn["value"])
			if !ok {
				return nil, fail(start, "\"conversations\" turn %d: expected an object with a string \"value\"", k)
			}
			texts[k] = text
		}
		samples = append(samples, Sample{PromptTokens: EstimateTokens(texts[0]), OutputTokens: EstimateTokens(texts[1])})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(name, &lines, err)
	}
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fail(int64(len(data)-len(rest)), "extra data after the list")
	}
	return samples, nil
}

// ReadCustom reads a custom dataset (data, read from name): JSON Lines,
// one object per line with a string "prompt" (vLLM's CustomDataset reads
// that column), and optionally "prompt_tokens", the prompt's tokens
// (servesim has no tokenizer; default EstimateTokens of the prompt), and
// "output_tokens", whole numbers of at least 1. A blank line is skipped.
// A Sample's OutputTokens is 0 when the line gives none. Errors name the
// file and the line.
func ReadCustom(name string, data []byte) ([]Sample, error) {
	var samples []Sample
	n := 0
	for text := range bytes.Lines(data) {
		n++
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		s, err := customLine(text)
		if err != nil {
			return nil, fmt.Errorf("dataset %s line %d: %w", name, n, err)
		}
		samples = append(samples, s)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("dataset %s: no lines: expected JSON Lines with a \"prompt\" field", name)
	}
	return samples, nil
}

// customLine reads one line of a custom dataset.
func customLine(text []byte) (Sample, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil {
		return Sample{}, fmt.Errorf("expected a JSON object: %v", err)
	}
	prompt, ok := jsonString(fields["prompt"])
	if !ok {
		return Sample{}, errors.New("expected a string \"prompt\"")
	}
	s := Sample{PromptTokens: EstimateTokens(prompt)}
	for _, f := range []struct {
		key string
		to  *int
	}{{"prompt_tokens", &s.PromptTokens}, {"output_tokens", &s.OutputTokens}} {
		raw, ok := fields[f.key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 1 {
			return Sample{}, fmt.Errorf("%q %s: expected a whole number of at least 1", f.key, limits.Quote(string(raw)))
		}
		*f.to = n
	}
	if s.PromptTokens < 1 {
		return Sample{}, errors.New("\"prompt\" is empty: give \"prompt_tokens\" or a prompt")
	}
	return s, nil
}

// jsonString is raw when it is a JSON string (not null, not another
// value); ok is false otherwise.
func jsonString(raw json.RawMessage) (s string, ok bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	return s, json.Unmarshal(raw, &s) == nil
}

// syntaxError names the file and line of a JSON decoding error.
func syntaxError(name string, lines *lineCounter, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("dataset %s line %d: invalid JSON: %v", name, lines.at(syntax.Offset), err)
	case errors.As(err, &typ):
		return fmt.Errorf("dataset %s line %d: invalid JSON: %v", name, lines.at(typ.Offset), err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("dataset %s line %d: invalid JSON: unexpected end of file", name, lines.at(int64(len(lines.data))))
	}
	return fmt.Errorf("dataset %s: invalid JSON: %v", name, err)
}

// lineCounter turns byte offsets of data into 1-based line numbers,
// counting forward from the last offset asked (offsets mostly increase).
type lineCounter struct {
	data   []byte
	offset int64
	line   int
}

// at is the line of the byte at offset.
func (c *lineCounter) at(offset int64) int {
	offset = min(max(offset, 0), int64(len(c.data)))
	if offset < c.offset || c.line == 0 {
		c.offset, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.offset:offset], []byte{'\n'})
	c.offset = offset
	return c.line
}
