package trace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"servesim/internal/workload"
)

// Epoch is the time of a trace's first request in the Azure form written by
// WriteAzure: the Unix epoch, 1970-01-01 00:00:00, without a UTC offset.
var Epoch = time.Unix(0, 0).UTC()

// azureTimeLayout writes a time to the microsecond, as the Azure 2024
// traces do but without their UTC offset.
const azureTimeLayout = "2006-01-02 15:04:05.000000"

// ConvertFormats are the formats a trace can be converted to.
var ConvertFormats = []Format{Azure, Mooncake}

// Convert writes t to w in format: WriteAzure or WriteMooncake.
func Convert(w io.Writer, t *Trace, format Format) error {
	switch format {
	case Azure:
		return WriteAzure(w, t)
	case Mooncake:
		return WriteMooncake(w, t)
	}
	return fmt.Errorf("cannot convert to %q: expected %s", format, formatList(ConvertFormats, "or"))
}

// WriteAzure writes t as an Azure trace: the header
// TIMESTAMP,ContextTokens,GeneratedTokens, then one row per request with
// the Epoch plus its arrival time, to the microsecond
// ("1970-01-01 00:00:12.345678"). Reading it back gives the same requests:
// arrivals are whole microseconds in every format.
func WriteAzure(w io.Writer, t *Trace) error {
	return writeLines(w, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"), t, func(line []byte, i int) []byte {
		r := &t.Requests[i]
		line = time.UnixMicro(r.ArrivalMicroseconds()).UTC().AppendFormat(line, azureTimeLayout) // Epoch plus the arrival
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(r.PromptTokens), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(r.OutputTokens), 10)
		return append(line, '\n')
	})
}

// WriteMooncake writes t as Mooncake JSON Lines, one object per request in
// the key order and spacing of the Mooncake traces:
// {"timestamp": 1234.567, "input_length": 10, "output_length": 5,
// "hash_ids": [1, 2]}. The timestamp is the arrival in milliseconds (exact:
// whole microseconds), hash_ids the request's hash ids, [] for a trace
// without any.
func WriteMooncake(w io.Writer, t *Trace) error {
	return writeLines(w, nil, t, func(line []byte, i int) []byte {
		r := &t.Requests[i]
		line = append(line, `{"timestamp": `...)
		line = appendMillis(line, r.ArrivalMicroseconds())
		line = append(line, `, "input_length": `...)
		line = strconv.AppendInt(line, int64(r.PromptTokens), 10)
		line = append(line, `, "output_length": `...)
		line = strconv.AppendInt(line, int64(r.OutputTokens), 10)
		line = append(line, `, "hash_ids": [`...)
		for k, id := range t.HashIDs(i) {
			if k > 0 {
				line = append(line, ", "...)
			}
			line = strconv.AppendInt(line, id, 10)
		}
		return append(line, "]}\n"...)
	})
}

// writeLines writes head, then line(i) for every request, through a
// buffer; it writes nothing when an arrival lies outside the span every
// trace reader keeps to (checkSpan).
func writeLines(w io.Writer, head []byte, t *Trace, line func(buf []byte, i int) []byte) error {
	if err := checkSpan(t); err != nil {
		return err
	}
	out := bufio.NewWriterSize(w, 64<<10)
	out.Write(head)
	buf := make([]byte, 0, 256)
	for i := range t.Requests {
		buf = line(buf[:0], i)
		if _, err := out.Write(buf); err != nil {
			return err
		}
	}
	return out.Flush()
}

// appendMillis appends us microseconds as milliseconds, with the fraction's
// trailing zeros dropped: 1234567 is 1234.567, 1500 is 1.5, 2000 is 2.
func appendMillis(buf []byte, us int64) []byte {
	buf = strconv.AppendInt(buf, us/1000, 10)
	if frac := us % 1000; frac != 0 {
		digits := [...]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := len(digits)
		for digits[n-1] == '0' {
			n--
		}
		buf = append(buf, digits[:n]...)
	}
	return buf
}

// checkSpan fails unless every arrival of t lies from 0 to
// workload.MaxTraceSpanMicros (2^53 microseconds, 285 years) after the first
// request, the span every trace reader keeps to: so each is a whole number
// of microseconds that a date and a time.Duration hold exactly, and the
// trace written reads back as it was.
func checkSpan(t *Trace) error {
	for i := range t.Requests {
		r := &t.Requests[i]
		if us := math.Round(r.ArrivalTimeS * 1e6); !(us >= 0 && us <= workload.MaxTraceSpanMicros) {
			return fmt.Errorf("trace %s: request %d arrives at %s s: expected 0 to 2^53 microseconds (285 years) after the first request",
				t.Source, r.ID, strconv.FormatFloat(r.ArrivalTimeS, 'f', -1, 64))
		}
	}
	return nil
}
