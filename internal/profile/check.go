package profile

import (
	"errors"
	"fmt"
	"strings"
)

// CheckStatus is the outcome of one validation check.
type CheckStatus string

// The outcomes of a check.
const (
	CheckOK     CheckStatus = "ok"
	CheckFailed CheckStatus = "failed"
	// CheckNotRun marks a check that needs the result of a failed one.
	CheckNotRun CheckStatus = "not_run"
)

// Check is one named validation step and its outcome. Checks are listed in
// the order the reference evaluates them, so the first failed check is the
// error the reference raises.
type Check struct {
	Name   string      `json:"name"`   // short name of the validation step
	Status CheckStatus `json:"status"` // outcome of the step
	Detail string      `json:"detail"` // what was found, or why the step failed or was skipped
}

// Report is the outcome of loading one profile: every check, the provenance
// that could be established, and the profile when it loads.
type Report struct {
	Path         string // the profile CSV
	ManifestPath string // where the manifest was looked for
	// ManifestFound reports whether a manifest exists at ManifestPath.
	ManifestFound bool
	// Status is the profile_status (the manifest's, else the CSV's first
	// row's, else "unknown"); empty when neither could be read.
	Status           string
	SourceLabel      string  // the manifest's source_label, else "unspecified profile"
	ProfileCSVSHA256 string  // empty when the CSV could not be read
	ManifestSHA256   string  // empty without a readable manifest
	Checks           []Check // every check, in evaluation order
	// Profile is the loaded profile; nil when any check failed.
	Profile *Profile
	// Err is the first failure (the reference's error); nil when the
	// profile loads.
	Err error
}

// checkList records checks in order and keeps the first failure.
type checkList struct {
	report *Report
	failed map[string]bool
}

func (c *checkList) ok(name, detail string) {
	c.report.Checks = append(c.report.Checks, Check{Name: name, Status: CheckOK, Detail: detail})
}

// fail records a failed check; problems are the distinct failures found,
// the first being what the reference reports.
func (c *checkList) fail(name string, problems ...string) {
	c.failed[name] = true
	detail := strings.Join(problems, "; ")
	c.report.Checks = append(c.report.Checks, Check{Name: name, Status: CheckFailed, Detail: detail})
	if c.report.Err == nil {
		c.report.Err = fmt.Errorf("profile %s: %s", c.report.Path, problems[0])
	}
}

// failErr records a failed check from an error.
func (c *checkList) failErr(name string, err error) { c.fail(name, err.Error()) }

// result records a check from a list of problems: ok when there are none.
func (c *checkList) result(name, okDetail string, problems []string) bool {
	if len(problems) == 0 {
		c.ok(name, okDetail)
		return true
	}
	c.fail(name, problems...)
	return false
}

// needs reports whether all named checks passed (were recorded and did not
// fail); otherwise it records name as not run.
func (c *checkList) needs(name string, deps ...string) bool {
	var missing []string
	for _, d := range deps {
		if c.failed[d] || !c.recorded(d) {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return true
	}
	c.failed[name] = true // a check that did not run cannot vouch for anything
	c.report.Checks = append(c.report.Checks, Check{
		Name: name, Status: CheckNotRun,
		Detail: "needs " + strings.Join(missing, ", "),
	})
	return false
}

func (c *checkList) recorded(name string) bool {
	for _, ch := range c.report.Checks {
		if ch.Name == name {
			return true
		}
	}
	return false
}

// allPassed reports whether every check from index start on passed.
func (c *checkList) allPassed(start int) bool {
	for _, ch := range c.report.Checks[start:] {
		if ch.Status != CheckOK {
			return false
		}
	}
	return true
}

// limitProblems keeps the first few problems of a long list and counts the
// rest, so a report stays readable.
func limitProblems(problems []string) []string {
	const keep = 5
	if len(problems) <= keep {
		return problems
	}
	return append(problems[:keep:keep], fmt.Sprintf("and %d more", len(problems)-keep))
}

var errNotObject = errors.New("the manifest must be a JSON object")
