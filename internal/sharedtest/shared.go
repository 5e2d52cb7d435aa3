// Package sharedtest locates the read-only shared data set (the Azure 2023
// traces, the real NVIDIA L4 profile rows and the reference outputs) that
// tests and benchmarks use; it imports testing and is for tests only. The
// data is never copied into the repository.
package sharedtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// EnvVar names the environment variable that points at the shared folder;
// .ci/run sets it to ../shared.
const EnvVar = "SERVESIM_SHARED"

// Dir returns the shared folder. With SERVESIM_SHARED set, a missing folder
// fails the test: CI must never silently skip. A relative SERVESIM_SHARED
// (".ci/run" style "../shared") is taken from the repository root, not from
// the package folder a test runs in. Without it, the folder beside the
// checkout is used when present, and the test is skipped otherwise.
func Dir(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	repoRoot := filepath.Join(filepath.Dir(file), "..", "..")
	if dir := os.Getenv(EnvVar); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(repoRoot, dir)
		}
		if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
			tb.Fatalf("shared data: missing: %s=%q is set but %v", EnvVar, os.Getenv(EnvVar), err)
		}
		return filepath.Clean(dir)
	}
	guess := filepath.Join(repoRoot, "..", "shared")
	if _, err := os.Stat(filepath.Join(guess, "data")); err != nil {
		noteSkipped(tb)
		tb.Skipf("shared data: NOT found, shared-data tests skipped (set %s to the shared folder)", EnvVar)
	}
	return filepath.Clean(guess)
}

// SkippedLogVar names the environment variable that `make test` sets to a
// file: each test that Dir skips appends its name there, one line, so that
// the summary line after the tests can say how many the missing data
// skipped.
const SkippedLogVar = "SERVESIM_SKIPPED_LOG"

// noteSkipped appends the test's package and name to the file
// SkippedLogVar names, when it names one.
func noteSkipped(tb testing.TB) {
	path := os.Getenv(SkippedLogVar)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return // the count is a courtesy: the skip itself is what matters
	}
	defer f.Close()
	wd, _ := os.Getwd()
	// One write of one short line: lines of tests in parallel processes
	// do not interleave (O_APPEND).
	_, _ = f.WriteString(filepath.Base(wd) + "." + tb.Name() + "\n")
}

// Path returns a file or folder inside the shared folder and fails the test
// when it does not exist.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("shared file missing: %v", err)
	}
	return p
}

// CodeTrace is the path of the Azure 2023 code trace.
func CodeTrace(tb testing.TB) string {
	tb.Helper()
	return Path(tb, "data", "azure2023", "AzureLLMInferenceTrace_code.csv")
}

// ConvTrace is the path of the Azure 2023 conversation trace.
func ConvTrace(tb testing.TB) string {
	tb.Helper()
	return Path(tb, "data", "azure2023", "AzureLLMInferenceTrace_conv.csv")
}

// Reference is the path of a file under the runnable reference folder.
func Reference(tb testing.TB, elem ...string) string {
	tb.Helper()
	return Path(tb, append([]string{"reference"}, elem...)...)
}
