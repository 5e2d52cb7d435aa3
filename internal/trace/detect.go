package trace

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Header columns that identify the CSV formats.
var (
	azureColumns    = []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
	burstGPTColumns = []string{"Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"}
	// burstGPTDetected are the BurstGPT columns detection looks for: those
	// no other format has.
	burstGPTDetected = []string{"Request tokens", "Response tokens", "Total tokens", "Log Type"}
)

// detect names the format of the input from its first line that is not
// blank, without consuming anything: a line starting with "{" is Mooncake
// JSON Lines; a CSV header naming any Azure column (TIMESTAMP,
// ContextTokens, GeneratedTokens) is Azure, so that a header missing one is
// told which; one naming any BurstGPT token or log column (Request tokens,
// Response tokens, Total tokens, Log Type) is BurstGPT. An input without a
// line is Azure, whose reader says what an empty trace lacks. Only the first
// bufferBytes of the input are looked at.
func detect(in *input, name string) (Format, error) {
	buf, err := in.br.Peek(bufferBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", readError(name, err)
	}
	line, number := firstLine(buf)
	if line == nil {
		return Azure, nil
	}
	if first := bytes.TrimLeft(line, " \t"); len(first) > 0 && first[0] == '{' {
		return Mooncake, nil
	}
	header := csvHeader(line)
	switch {
	case hasAny(header, azureColumns):
		return Azure, nil
	case hasAny(header, burstGPTDetected):
		return BurstGPT, nil
	}
	return "", fmt.Errorf("trace %s line %d: not a trace format servesim knows: tried %s (header %s), %s (header %s) and %s (JSON Lines with timestamp, input_length, output_length); name the columns of another CSV log (format %s)",
		name, number, Azure, strings.Join(azureColumns, ","), BurstGPT, strings.Join(burstGPTColumns, ","), Mooncake, CSV)
}

// firstLine returns the first line of buf that is not blank (empty, or a
// lone carriage return), without its line end, and its 1-based number; nil
// when there is none. A line cut by the end of buf is returned as it is.
func firstLine(buf []byte) ([]byte, int) {
	for number := 1; len(buf) > 0; number++ {
		line, rest, _ := bytes.Cut(buf, []byte{'\n'})
		if line = trimEOL(line); len(line) > 0 {
			return line, number
		}
		buf = rest
	}
	return nil, 0
}

// csvHeader splits a header line into its column names; nil when it is not
// valid CSV.
func csvHeader(line []byte) []string {
	r := csv.NewReader(bytes.NewReader(line))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	header, err := r.Read()
	if err != nil {
		return nil
	}
	return header
}

// hasAny reports whether header holds one of names.
func hasAny(header, names []string) bool {
	for _, name := range names {
		if slices.Contains(header, name) {
			return true
		}
	}
	return false
}
