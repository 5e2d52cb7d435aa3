package calibrate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logStart is the first timestamp of the synthetic logs.
var logStart = time.Date(2024, 5, 14, 9, 21, 3, 123e6, time.UTC)

// formatPowerLog writes samples as nvidia-smi does for PowerLogQuery:
// timestamps from logStart, power with two decimals, whole MHz, degrees
// and percent.
func formatPowerLog(samples []PowerSample) []byte { return formatPowerLogAt(logStart, samples) }

// formatPowerLogAt is formatPowerLog with timestamps from start.
func formatPowerLogAt(start time.Time, samples []PowerSample) []byte {
	var b strings.Builder
	b.WriteString(PowerLogHeader + "\n")
	for _, s := range samples {
		at := start.Add(time.Duration(math.Round(s.TimeS*1e3)) * time.Millisecond)
		util := "[N/A]"
		if !math.IsNaN(s.UtilizationPct) {
			util = fmt.Sprintf("%.0f %%", s.UtilizationPct)
		}
		fmt.Fprintf(&b, "%s, %.2f W, %.0f MHz, %.0f MHz, %.0f, %s\n", at.Format("2006/01/02 15:04:05.000"),
			s.PowerW, s.SMClockMHz, s.MemClockMHz, s.TemperatureC, util)
	}
	return []byte(b.String())
}

const header = PowerLogHeader + "\n"

func TestParsePowerLogReadsNvidiaSmiOutput(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []PowerSample
	}{
		{
			name: "units, LF",
			data: header +
				"2024/05/14 09:21:03.123, 61.32 W, 1410 MHz, 6251 MHz, 57, 98 %\n" +
				"2024/05/14 09:21:03.224, 245.10 W, 1395 MHz, 6251 MHz, 58, 100 %\n",
			want: []PowerSample{
				{TimeS: 0, PowerW: 61.32, SMClockMHz: 1410, MemClockMHz: 6251, TemperatureC: 57, UtilizationPct: 98},
				{TimeS: 0.101, PowerW: 245.10, SMClockMHz: 1395, MemClockMHz: 6251, TemperatureC: 58, UtilizationPct: 100},
			},
		},
		{
			name: "CRLF, no final line break, utilization unknown",
			data: strings.ReplaceAll(header, "\n", "\r\n") +
				"2024/05/14 09:21:03.123, 61.32 W, 1410 MHz, 6251 MHz, 57, [N/A]\r\n" +
				"2024/05/14 09:21:04.123, 62 W, 1410 MHz, 6251 MHz, 57, [Not Supported]",
			want: []PowerSample{
				{TimeS: 0, PowerW: 61.32, SMClockMHz: 1410, MemClockMHz: 6251, TemperatureC: 57, UtilizationPct: math.NaN()},
				{TimeS: 1, PowerW: 62, SMClockMHz: 1410, MemClockMHz: 6251, TemperatureC: 57, UtilizationPct: math.NaN()},
			},
		},
		{
			name: "nounits, clocks named as asked, BOM",
			data: "\ufefftimestamp, power.draw [W], clocks.sm [MHz], clocks.mem [MHz], temperature.gpu, utilization.gpu [%]\n" +
				"2024/05/14 09:21:03.123, 61.32, 1410, 6251, 57, 98\n",
			want: []PowerSample{{TimeS: 0, PowerW: 61.32, SMClockMHz: 1410, MemClockMHz: 6251, TemperatureC: 57, UtilizationPct: 98}},
		},
		{
			name: "across midnight",
			data: header +
				"2024/05/14 23:59:59.950, 61.32 W, 1410 MHz, 6251 MHz, 57, 98 %\n" +
				"2024/05/15 00:00:00.050, 61.32 W, 1410 MHz, 6251 MHz, 57, 98 %\n",
			want: []PowerSample{
				{TimeS: 0, PowerW: 61.32, SMClockMHz: 1410, MemClockMHz: 6251, TemperatureC: 57, UtilizationPct: 98},
				{TimeS: 0.1, PowerW: 61.32, SMClockMHz: 1410, MemClockMHz: 6251, TemperatureC: 57, UtilizationPct: 98},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := ParsePowerLog("gpu.csv", []byte(tt.data))
			require.NoError(t, err)
			assert.Equal(t, "gpu.csv", log.File)
			require.Len(t, log.Samples, len(tt.want))
			for i, want := range tt.want {
				got := log.Samples[i]
				assert.InDelta(t, want.TimeS, got.TimeS, 1e-9, "sample %d", i)
				assert.Equal(t, want.PowerW, got.PowerW, "sample %d", i)
				assert.Equal(t, want.SMClockMHz, got.SMClockMHz, "sample %d", i)
				assert.Equal(t, want.MemClockMHz, got.MemClockMHz, "sample %d", i)
				assert.Equal(t, want.TemperatureC, got.TemperatureC, "sample %d", i)
				if math.IsNaN(want.UtilizationPct) {
					assert.True(t, math.IsNaN(got.UtilizationPct), "sample %d: utilization %v, want NaN", i, got.UtilizationPct)
				} else {
					assert.Equal(t, want.UtilizationPct, got.UtilizationPct, "sample %d", i)
				}
			}
		})
	}
}

func TestParsePowerLogStartIsTheLocalTimeWritten(t *testing.T) {
	log, err := ParsePowerLog("gpu.csv", []byte(header+"2024/05/14 09:21:03.123, 61.32 W, 1410 MHz, 6251 MHz, 57, 98 %\n"))
	require.NoError(t, err)
	assert.Equal(t, time.Date(2024, 5, 14, 9, 21, 3, 123e6, time.Local), log.Start)
}

func TestParsePowerLogRefusals(t *testing.T) {
	row := "2024/05/14 09:21:03.123, 61.32 W, 1410 MHz, 6251 MHz, 57, 98 %\n"
	tests := []struct {
		name, data, want string
	}{
		{"empty", "", `power log gpu.csv line 1: empty: expected the header "timestamp, power.draw [W]`},
		{"header only", header, "power log gpu.csv line 2: no samples: expected rows after the header"},
		{"average power asked", "timestamp, power.draw.average [W], clocks.current.sm [MHz], clocks.current.memory [MHz], temperature.gpu, utilization.gpu [%]\n" + row,
			`power log gpu.csv line 1: header "timestamp, power.draw.average [W], clocks.current.sm [MHz], clocks.current.memor"... (125 bytes): expected "timestamp, power.draw [W], clocks.current.sm [MHz]`},
		{"index column", "index, timestamp, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], temperature.gpu, utilization.gpu [%]\n",
			`power log gpu.csv line 1: header "index, timestamp,`},
		{"power not a number", header + row + "2024/05/14 09:21:03.223, abc W, 1410 MHz, 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 3: power.draw "abc W": expected a number of W`},
		{"power unknown", header + "2024/05/14 09:21:03.223, [N/A], 1410 MHz, 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 2: power.draw "[N/A]": expected a number of W`},
		{"power negative", header + "2024/05/14 09:21:03.223, -1 W, 1410 MHz, 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 2: power.draw "-1 W": expected a number of W`},
		{"power wrong unit", header + "2024/05/14 09:21:03.223, 61 mW, 1410 MHz, 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 2: power.draw "61 mW": expected a number of W`},
		{"clock unknown", header + "2024/05/14 09:21:03.223, 61 W, [Not Supported], 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 2: clocks.sm "[Not Supported]": expected a number of MHz`},
		{"temperature", header + "2024/05/14 09:21:03.223, 61 W, 1410 MHz, 6251 MHz, inf, 98 %\n",
			`power log gpu.csv line 2: temperature.gpu "inf": expected a number of °C`},
		{"utilization over 100", header + "2024/05/14 09:21:03.223, 61 W, 1410 MHz, 6251 MHz, 57, 101 %\n",
			`power log gpu.csv line 2: utilization.gpu "101 %": expected a percentage from 0 to 100, [N/A] or [Not Supported]`},
		{"timestamp", header + "14/05/2024 09:21:03.223, 61 W, 1410 MHz, 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 2: timestamp "14/05/2024 09:21:03.223": expected YYYY/MM/DD HH:MM:SS.mmm`},
		{"fields", header + "2024/05/14 09:21:03.223, 61 W, 1410 MHz\n",
			"power log gpu.csv line 2: 3 fields: expected 6 (timestamp, power.draw, clocks.sm, clocks.mem, temperature.gpu, utilization.gpu)"},
		{"blank line", header + row + "\n" + row, "power log gpu.csv line 3: 1 fields: expected 6"},
		{"two runs appended", header + row + header + row, "power log gpu.csv line 3: a second header: expected one nvidia-smi run per file"},
		{"goes back", header + row + "2024/05/14 09:21:03.023, 61 W, 1410 MHz, 6251 MHz, 57, 98 %\n",
			`power log gpu.csv line 3: timestamp goes back: "2024/05/14 09:21:03.023" after line 2's 2024/05/14 09:21:03.123`},
		{"two GPUs", header + row + "2024/05/14 09:21:03.123, 58.02 W, 1410 MHz, 6251 MHz, 52, 0 %\n",
			`power log gpu.csv line 3: timestamp "2024/05/14 09:21:03.123" repeats line 2's: expected the log of one GPU (nvidia-smi writes a row per GPU per timestamp; pick one with -i)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePowerLog("gpu.csv", []byte(tt.data))
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "error %q\nwant a prefix %q", err, tt.want)
			assert.NotContains(t, err.Error(), "\n")
			var logErr *PowerLogError
			assert.ErrorAs(t, err, &logErr)
		})
	}
}

func TestReadPowerLog(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		path := filepath.Join("testdata", "power", "gpu.csv")
		log, err := ReadPowerLog(path)
		require.NoError(t, err)
		assert.Equal(t, path, log.File)
		require.Len(t, log.Samples, 3)
		assert.InDelta(t, 0.202, log.Samples[2].TimeS, 1e-9)
		assert.Equal(t, 250.87, log.Samples[2].PowerW)
		assert.True(t, math.IsNaN(log.Samples[2].UtilizationPct))
	})
	t.Run("two GPUs", func(t *testing.T) {
		_, err := ReadPowerLog(filepath.Join("testdata", "power", "twogpus.csv"))
		assert.ErrorContains(t, err, "twogpus.csv line 3: timestamp \"2024/05/14 09:21:03.123\" repeats line 2's")
	})
	t.Run("missing", func(t *testing.T) {
		_, err := ReadPowerLog(filepath.Join(t.TempDir(), "none.csv"))
		assert.ErrorContains(t, err, "none.csv: open ")
	})
	t.Run("too large", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "huge.csv")
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(MaxPowerLogBytes+1)) // sparse: nothing written
		require.NoError(t, f.Close())
		_, err = ReadPowerLog(path)
		assert.EqualError(t, err, "power log "+path+": 256.0 MiB: larger than the 256 MiB cap")
	})
}

// FuzzParsePowerLog: ParsePowerLog never panics, its errors are one line
// naming the file, and a log it returns has samples with increasing times
// from 0 and finite, non-negative readings, which read back the same once
// written again.
func FuzzParsePowerLog(f *testing.F) {
	row := "2024/05/14 09:21:03.123, 61.32 W, 1410 MHz, 6251 MHz, 57, 98 %\n"
	for _, seed := range []string{"", header, header + row, header + row + row,
		strings.ReplaceAll(header+row, "\n", "\r\n"), header + "2024/05/14 09:21:03.123, [N/A], 1410 MHz, 6251 MHz, 57, [N/A]\n",
		header + "2024/05/14 09:21:03.123, 1e400 W, 1410 MHz, 6251 MHz, 57, 98 %\n"} {
		f.Add([]byte(seed))
	}
	for _, name := range []string{"gpu.csv", "twogpus.csv"} {
		if data, err := os.ReadFile(filepath.Join("testdata", "power", name)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := ParsePowerLog("fuzz.csv", data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "power log fuzz.csv") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error %q: want one line naming the file", msg)
			}
			return
		}
		if len(log.Samples) == 0 || log.Samples[0].TimeS != 0 {
			t.Fatalf("samples %v: want at least one, the first at 0 s", log.Samples)
		}
		for i, s := range log.Samples {
			if i > 0 && !(s.TimeS > log.Samples[i-1].TimeS) {
				t.Fatalf("sample %d at %v s after %v s", i, s.TimeS, log.Samples[i-1].TimeS)
			}
			for _, v := range []float64{s.PowerW, s.SMClockMHz, s.MemClockMHz, s.TemperatureC} {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatalf("sample %d: %+v: want finite, non-negative readings", i, s)
				}
			}
			if !math.IsNaN(s.UtilizationPct) && !(s.UtilizationPct >= 0 && s.UtilizationPct <= 100) {
				t.Fatalf("sample %d: utilization %v", i, s.UtilizationPct)
			}
		}
	})
}
