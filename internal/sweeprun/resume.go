package sweeprun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"servesim/internal/runparams"
	"servesim/internal/sweep"
)

// ResumeAuto is the value of --resume that takes up whatever an earlier
// run of the same shard left behind its -o FILE: FILE itself (a shard that
// completed: nothing is left to run) or FILE.partial (one that was
// stopped), whichever holds records of this grid and shard, FILE first.
// A file that cannot be resumed (of another grid or shard: an earlier
// study's; unreadable) is not an error but said in one line: the shard
// runs its cells and replaces it. Once the shard completes, FILE.partial
// is removed, its records being in FILE. The same command thus starts a
// shard, resumes it after a requeue, a preemption or a time limit, and
// does nothing (but rewrite FILE, byte for byte) for a shard already done.
const ResumeAuto = "auto"

// resumeSetting is the setting of Output.Resume.
const resumeSetting = runparams.Setting("resume")

// resume reads the records of out.Resume; for ResumeAuto, of the first
// file out.Path leaves that this shard can resume, saying on out.Stderr
// what it takes and what it passes over.
func (s *Sweep) resume(out Output, id identity, in *inputs) (*sweep.RecordIndex, error) {
	if out.Resume != ResumeAuto {
		return s.readResume(out.Resume, out.Stderr, id, in)
	}
	for _, candidate := range []string{out.Path, out.Path + ".partial"} {
		if info, err := os.Stat(candidate); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err == nil && !info.Mode().IsRegular() {
			continue // a device or FIFO -o writes to: nothing to resume
		}
		x, err := s.readResume(candidate, out.Stderr, id, in)
		if err != nil {
			out.Stderr.Warnf("servesim: sweep: %s %s: not resumed, this shard runs its cells again and replaces it: %v\n", resumeSetting, ResumeAuto, err)
			continue
		}
		if len(x.Refs) == 0 {
			x.Close()
			continue
		}
		out.Stderr.Warnf("servesim: sweep: %s %s: %d of the shard's %d runs taken from %s\n", resumeSetting, ResumeAuto, len(x.Refs), s.shard.Len(), candidate)
		return x, nil
	}
	return nil, nil
}

// removeResumed removes, once a shard with --resume auto completed,
// the FILE.partial it left before: its records are in FILE now (or they
// were of another grid, which was said).
func removeResumed(out Output) {
	if out.Resume != ResumeAuto {
		return
	}
	partial := out.Path + ".partial"
	if info, err := os.Lstat(partial); err == nil && info.Mode().IsRegular() {
		if err := os.Remove(partial); err != nil {
			out.Stderr.Warnf("servesim: warning: sweep: %s %s: %v\n", resumeSetting, ResumeAuto, err)
		}
	}
}

// failedHint is what follows the count of failed runs when the first
// failed because a relative profile or trace path did not load: the
// folder it was taken from (a job runs in the folder it was submitted
// from, or the one its scheduler chose), which a record does not say.
func (s *Sweep) failedHint(in *inputs, first sweep.FirstFailure) string {
	if first.Err == "" || first.Cell < s.shard.Lo || first.Cell >= s.shard.Hi {
		return ""
	}
	c := s.shard.Cell(first.Cell)
	for _, path := range []string{s.grid.Text(c, sweep.AxisTrace), s.grid.Text(c, sweep.AxisProfile)} {
		_, traceErr := in.workloadErrs[path]
		_, profileErr := in.profileErrs[path]
		if (traceErr || profileErr) && !filepath.IsAbs(path) && path != "-" {
			if wd, err := os.Getwd(); err == nil {
				return fmt.Sprintf("(%s is relative to the working folder %s)", path, wd)
			}
		}
	}
	return ""
}
