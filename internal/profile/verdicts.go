package profile

import "fmt"

// NewVerdicts validates the profiles at paths (each a profile CSV or a
// folder holding one, ResolvePath) as NewVerdict does. failed is nil when
// every one is valid, else it says which failed: the one's error, or how
// many of them did and the first's.
func NewVerdicts(paths []string, requireMeasured bool) (v Verdicts, failed error) {
	var failures []string
	for _, path := range paths {
		verdict := NewVerdict(ResolvePath(path), requireMeasured)
		if !verdict.Valid {
			failures = append(failures, *verdict.Error)
		}
		v.Bundles = append(v.Bundles, verdict)
	}
	switch {
	case len(failures) == 0:
		return v, nil
	case len(paths) == 1:
		return v, fmt.Errorf("%s", failures[0])
	}
	return v, fmt.Errorf("%d of %d profiles are invalid; first: %s", len(failures), len(paths), failures[0])
}
