package profile

import (
	"testing"

	"servesim/internal/profile/profiletest"
	"servesim/internal/pycompat"
)

// Size tiers of the validation benchmark: the realistic bundle has
// about 2,000 raw rows (the synthetic bundle has 1,950) and 65,000
// telemetry rows.
const realisticTelemetryRows = 65000

// BenchmarkValidateBundle validates a measured bundle of realistic size,
// reading and hashing every file.
func BenchmarkValidateBundle(b *testing.B) {
	path, err := profiletest.New(realisticTelemetryRows).Write(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Validate(path); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// TestCountingTelemetryAllocatesNothingPerRow guards the telemetry path:
// counting 10x more rows must not allocate more.
func TestCountingTelemetryAllocatesNothingPerRow(t *testing.T) {
	allocs := func(rows int) float64 {
		data := profiletest.New(rows).Files()[profiletest.TelemetryCSV]
		return testing.AllocsPerRun(5, func() {
			if _, err := pycompat.ReadTable(profiletest.TelemetryCSV, data, true); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(500), allocs(5000)
	if large > small {
		t.Fatalf("counting 5000 telemetry rows allocates %v times, 500 rows %v times", large, small)
	}
}
