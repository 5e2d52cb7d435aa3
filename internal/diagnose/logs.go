package diagnose

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Logs diagnoses the request logs named by paths, read in order as one log
// through open (which returns the input and what errors call it, "stdin"
// for "-"). With byWindowS > 0 it splits the requests into windows of that
// many seconds by arrival time and returns the WindowReport named after
// window; otherwise the one Diagnosis named window (whose overload
// finding uses the arrival times when the logs have them). It also returns
// the diagnoses, for a figure or a table. Errors name the file, the line
// and the field.
func Logs(paths []string, open func(path string) (io.ReadCloser, string, error), window string, byWindowS float64, opts Options) (any, []Diagnosis, error) {
	readOpts := ReadOptions{Arrival: byWindowS > 0, ArrivalIfPresent: true}
	var add func(Record) error
	var result func() (any, []Diagnosis, error)
	if byWindowS > 0 {
		windows, err := NewWindower(byWindowS)
		if err != nil {
			return nil, nil, err
		}
		add = windows.Add
		result = func() (any, []Diagnosis, error) {
			report, err := windows.Report(window, opts)
			return report, report.Windows, err
		}
	} else {
		acc := NewAccumulator(0)
		add = acc.AddRecord
		result = func() (any, []Diagnosis, error) {
			d, err := acc.Diagnosis(window, opts)
			return d, []Diagnosis{d}, err
		}
	}
	for _, path := range paths {
		if err := scanLog(path, open, readOpts, add); err != nil {
			return nil, nil, err
		}
	}
	doc, snapshots, err := result()
	if errors.Is(err, ErrNoLogs) {
		return nil, nil, fmt.Errorf("request logs %s: no requests: expected a CSV header row followed by rows, or JSON Lines", joinNames(paths))
	}
	return doc, snapshots, err
}

// scanLog reads one request log, passing each request to add; errors name
// the file, the line and the field.
func scanLog(path string, open func(string) (io.ReadCloser, string, error), readOpts ReadOptions, add func(Record) error) error {
	in, name, err := open(path)
	if err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	defer in.Close()
	_, err = Scan(in, name, readOpts, func(r Record) error {
		if err := add(r); err != nil {
			var ie *InputError
			if errors.As(err, &ie) {
				ie.File, ie.Line = name, r.Line
			}
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("request log %w", err)
	}
	return nil
}

// joinNames lists input names for a message, "-" as stdin.
func joinNames(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p
		if p == "-" {
			names[i] = "stdin"
		}
	}
	return strings.Join(names, ", ")
}
