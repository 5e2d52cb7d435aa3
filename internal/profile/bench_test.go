package profile

import (
	"testing"

	"servesim/internal/profile/profiletest"
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
