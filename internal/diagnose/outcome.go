package diagnose

import (
	"io"
	"os"
	"path/filepath"

	"servesim/internal/figure"
)

// Outcome is a diagnosis in the forms the command writes: the JSON
// document, the table for terminals (Table) and the figure.
type Outcome struct {
	Document any
	Figure   figure.Figure
	table    func() string
}

// Table is the outcome's table for terminals.
func (o Outcome) Table() string { return o.table() }

// DemoOutcome is the reference's before/after remediation report on its
// controlled workload (Demo).
func DemoOutcome(opts Options) (Outcome, error) {
	report, err := Demo(opts)
	if err != nil {
		return Outcome{}, err
	}
	snapshots := []Snapshot{report.BeforeRemediation, report.AfterRemediation}
	return Outcome{Document: report, Figure: Figure("demo: before and after remediation", snapshots), table: report.Table}, nil
}

// LogsOutcome diagnoses the request logs in files, read as one log ("-":
// stdin), as Logs does; an empty window names the snapshot after the first
// file (its base name, or stdin).
func LogsOutcome(files []string, stdin io.Reader, window string, byWindowS float64, opts Options) (Outcome, error) {
	if window == "" {
		window = "stdin"
		if files[0] != "-" {
			window = filepath.Base(files[0])
		}
	}
	doc, diagnoses, err := Logs(files, func(path string) (io.ReadCloser, string, error) {
		if path == "-" {
			return io.NopCloser(stdin), "stdin", nil
		}
		f, err := os.Open(path)
		return f, path, err
	}, window, byWindowS, opts)
	if err != nil {
		return Outcome{}, err
	}
	var fig figure.Figure
	if report, ok := doc.(WindowReport); ok {
		fig = report.Figure(window) // with the empty windows between
	} else {
		fig = Figure(window, []Snapshot{diagnoses[0].Snapshot})
	}
	return Outcome{Document: doc, Figure: fig, table: func() string { return DiagnosisTable(diagnoses) }}, nil
}
