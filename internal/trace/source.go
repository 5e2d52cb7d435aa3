package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"servesim/internal/workload"
)

// Source is a trace read while it is simulated (a workload.Source, for
// plant.RunStream): its requests are handed over one at a time as they are
// read, never all held, with the rules of Load. Each Read reads the file at
// Path again from its start; standard input ("-") can be read once. A
// Mooncake trace's hash ids are not kept.
type Source struct {
	Path        string    // the trace file, or "-" for Stdin
	Stdin       io.Reader // what "-" reads
	MaxElapsedS float64   // as for Load
	Options     Options   // as for Load
	stdinRead   bool
}

// Name is what errors and the provenance call the trace: its path, or
// "stdin".
func (s *Source) Name() string {
	if s.Path == "-" {
		return "stdin"
	}
	return s.Path
}

// Reopenable reports whether the trace can be read more than once (it is a
// file, not standard input).
func (s *Source) Reopenable() bool { return s.Path != "-" }

// open opens the trace from its start.
func (s *Source) open() (io.ReadCloser, error) {
	if s.Path != "-" {
		return os.Open(s.Path)
	}
	if s.stdinRead {
		return nil, errors.New("standard input can be read only once")
	}
	s.stdinRead = true
	return io.NopCloser(s.Stdin), nil
}

// Read implements workload.Source.
func (s *Source) Read(emit func(workload.Request) error) (workload.Workload, error) {
	in, err := s.open()
	if err != nil {
		return workload.Workload{}, fmt.Errorf("trace %s: %w", s.Name(), err)
	}
	defer in.Close()
	w, _, err := read(in, s.Name(), s.MaxElapsedS, s.Options, defaultCaps, func(*input, Format) sink {
		return sink{emit: emit}
	})
	return w, err
}

// Estimate implements workload.Source: the lines of the file's first
// bytes scaled to its size; 0 for standard input and for anything but a
// regular file (a FIFO or a device would give Read what Estimate read).
func (s *Source) Estimate() int {
	if s.Path == "-" {
		return 0
	}
	if info, err := os.Stat(s.Path); err != nil || !info.Mode().IsRegular() {
		return 0 // Read says why, or reads the FIFO whole
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return 0 // Read says why
	}
	defer f.Close()
	return newInput(f, defaultCaps).estimate(func(sample []byte) int { return bytes.Count(sample, []byte{'\n'}) })
}
