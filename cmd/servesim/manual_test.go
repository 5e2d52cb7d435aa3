package main

import (
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The manual is README.md, CONTRIBUTING.md, CHANGELOG.md and every
// Markdown file under docs/. These tests keep its links leading somewhere
// and its commands running: TestReferenceIsCurrent (reference_test.go)
// keeps the generated command reference current.

// repoRoot is the repository root, seen from this package's folder.
const repoRoot = "../.."

// manualFiles returns the manual's Markdown files, relative to the
// repository root, the generated reference included.
func manualFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

// markdownLine is one line of a Markdown file outside its fenced code
// blocks, with its inline code spans removed, and its number.
type markdownLine struct {
	text string
	num  int
}

var codeSpan = regexp.MustCompile("`+[^`]*`+")

// outsideFences yields the number and text of each line of a Markdown
// text that is not inside a fenced code block.
func outsideFences(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		for i, line := range strings.Split(text, "\n") {
			trimmed := strings.TrimSpace(line)
			if fence != "" {
				if strings.HasPrefix(trimmed, fence) {
					fence = ""
				}
				continue
			}
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				continue
			}
			if !yield(i+1, line) {
				return
			}
		}
	}
}

// proseLines returns the lines of a Markdown text that are not inside a
// fenced code block, without their inline code spans.
func proseLines(text string) []markdownLine {
	var lines []markdownLine
	for num, line := range outsideFences(text) {
		lines = append(lines, markdownLine{text: codeSpan.ReplaceAllString(line, ""), num: num})
	}
	return lines
}

var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// anchors returns the anchors GitHub gives the headings of a Markdown text:
// the heading lowercased, without punctuation (letters, digits, spaces,
// hyphens and underscores stay), spaces turned into hyphens, and "-1",
// "-2", ... after the second and later headings of the same anchor.
func anchors(text string) map[string]bool {
	found := map[string]bool{}
	seen := map[string]int{}
	for _, line := range outsideFences(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = anchor + "-" + string(rune('0'+n))
		} else {
			seen[anchor] = 1
		}
		found[anchor] = true
	}
	return found
}

var markdownLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// TestManualLinks follows every relative link of the manual: the file or
// folder it names must exist, and an anchor must be a heading of the
// Markdown file it names (or of the file the link is in).
func TestManualLinks(t *testing.T) {
	t.Parallel()
	texts := map[string]string{}
	read := func(name string) (string, bool) {
		if text, ok := texts[name]; ok {
			return text, true
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, name))
		if err != nil {
			return "", false
		}
		texts[name] = string(data)
		return texts[name], true
	}
	files := manualFiles(t)
	require.Contains(t, files, "docs/index.md")
	links := 0
	for _, file := range files {
		text, ok := read(file)
		require.True(t, ok, file)
		for _, line := range proseLines(text) {
			for _, m := range markdownLink.FindAllStringSubmatch(line.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				path, anchor, _ := strings.Cut(target, "#")
				name := file
				if path != "" {
					name = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
					if strings.HasPrefix(name, "../") {
						t.Errorf("%s:%d: link %s leads out of the repository", file, line.num, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(repoRoot, name)); err != nil {
						t.Errorf("%s:%d: link %s: %s does not exist", file, line.num, target, name)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(name, ".md") {
					t.Errorf("%s:%d: link %s: an anchor into %s, which is not Markdown", file, line.num, target, name)
					continue
				}
				linked, _ := read(name)
				if !anchors(linked)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading whose anchor is #%s", file, line.num, target, name, anchor)
				}
			}
		}
	}
	assert.Greater(t, links, 100, "the manual's links were not found")
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	got := anchors("# servesim\n## Fleet: many GPUs behind a router (`simulate --replicas N`, `--fleet FILE`)\n" +
		"```sh\n# not a heading\n```\n## Limits\n### Limits\n## `trace synth`, and α\n")
	assert.Equal(t, map[string]bool{
		"servesim": true,
		"fleet-many-gpus-behind-a-router-simulate---replicas-n---fleet-file": true,
		"limits": true, "limits-1": true,
		"trace-synth-and-α": true,
	}, got)
}

// helpManualPage is a help file's pointer into the manual: a page, and
// perhaps the heading of its section in quotes (docs/simulate.md, "Service
// models").
var helpManualPage = regexp.MustCompile(`(docs/[\w/.-]+\.md)(?:,\s+"([^"]+)")?`)

// TestHelpFilesNameManualPages: a command's help that sends the reader to
// the manual names a page that exists, and a section of it by a heading it
// has (and never the README, which is the front page only).
func TestHelpFilesNameManualPages(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(helpFiles, "help/*.txt")
	require.NoError(t, err)
	pages := 0
	for _, name := range names {
		data, err := helpFiles.ReadFile(name)
		require.NoError(t, err)
		text := string(data)
		assert.NotContains(t, text, "README", "%s: name the manual's page (docs/...), not the README", name)
		for _, m := range helpManualPage.FindAllStringSubmatch(text, -1) {
			pages++
			data, err := os.ReadFile(filepath.Join(repoRoot, m[1]))
			if !assert.NoError(t, err, "%s names %s", name, m[1]) || m[2] == "" {
				continue
			}
			section := regexp.MustCompile(`(?m)^#+ .*` + regexp.QuoteMeta(strings.Join(strings.Fields(m[2]), " ")))
			assert.Regexp(t, section, string(data), "%s names the section %q of %s, which has no such heading", name, m[2], m[1])
		}
	}
	assert.Positive(t, pages)
}

// manualCommand is a servesim command shown in the manual: where, and its
// words as the shell would pass them.
type manualCommand struct {
	where string
	words []string
}

// shellWords splits a command line as a POSIX shell would for servesim's
// commands: words apart at blanks, single and double quotes grouping (a
// backslash escapes the next character outside single quotes).
func shellWords(line string) []string {
	var words []string
	var b strings.Builder
	inWord := false
	quote := rune(0)
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}

// shellSplit cuts a command line at the shell's separators outside quotes
// (|, ;, &, && and ||) and at a comment, returning the pieces.
func shellSplit(line string) []string {
	var pieces []string
	start := 0
	quote := rune(0)
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' '):
			return append(pieces, line[start:i])
		case r == '|' || r == ';' || r == '&':
			pieces = append(pieces, line[start:i])
			start = i + 1
		}
	}
	return append(pieces, line[start:])
}

// servesimCommands returns the servesim commands of one shell line of the
// manual: each piece of a pipeline or list that runs servesim, without its
// redirections ("> FILE", "2> FILE", "< FILE") or a process substitution
// around it.
func servesimCommands(line string) [][]string {
	var commands [][]string
	for _, piece := range shellSplit(line) {
		words := shellWords(strings.TrimSpace(piece))
		for len(words) > 0 && (words[0] == "do" || words[0] == "then" || words[0] == "$" || strings.HasPrefix(words[0], "<(") || words[0] == "source") {
			if strings.HasPrefix(words[0], "<(") {
				words[0] = strings.TrimPrefix(words[0], "<(")
				continue
			}
			words = words[1:]
		}
		if len(words) == 0 || words[0] != "servesim" {
			continue
		}
		var kept []string
		for i := 0; i < len(words); i++ {
			w := strings.TrimSuffix(words[i], ")")
			if w == ">" || w == ">>" || w == "2>" || w == "<" {
				i++
				continue
			}
			if w != "" {
				kept = append(kept, w)
			}
		}
		commands = append(commands, kept)
	}
	return commands
}

// manualCommands returns every servesim command in the shell blocks (sh,
// bash, shell, console) of the manual's hand-written pages, and in its text
// blocks the lines that start with "$ servesim"; then those of the
// commands' examples (help/*.example.txt), which the generated reference
// shows.
func manualCommands(t *testing.T) []manualCommand {
	t.Helper()
	var commands []manualCommand
	for _, file := range manualFiles(t) {
		if strings.HasPrefix(file, "docs/reference/") {
			continue // generated: its examples are the help files' (below)
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, file))
		require.NoError(t, err)
		lang, inBlock := "", false
		var block []string
		for i, line := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				inBlock = !inBlock
				lang = strings.TrimPrefix(trimmed, "```")
				continue
			}
			if !inBlock {
				continue
			}
			if lang == "sh" || lang == "bash" || lang == "shell" || lang == "console" || strings.HasPrefix(trimmed, "$ servesim") || (len(block) > 0 && strings.HasSuffix(block[len(block)-1], "\\")) {
				block = append(block, trimmed)
			} else {
				block = append(block, "")
			}
			_ = i
		}
		commands = append(commands, shellCommands(file, strings.Join(block, "\n"))...)
	}
	examples, err := fs.Glob(helpFiles, "help/*.example.txt")
	require.NoError(t, err)
	for _, name := range examples {
		data, err := helpFiles.ReadFile(name)
		require.NoError(t, err)
		commands = append(commands, shellCommands("cmd/servesim/"+name, string(data))...)
	}
	return commands
}

// shellCommands returns the servesim commands of shell lines, a continued
// line (ending in a backslash) joined to the next, each with where it
// starts (file:line).
func shellCommands(file, text string) []manualCommand {
	var commands []manualCommand
	var pending strings.Builder
	start := 0
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if pending.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		pending.WriteString(trimmed)
		for _, words := range servesimCommands(pending.String()) {
			commands = append(commands, manualCommand{where: file + ":" + strconv.Itoa(start), words: words})
		}
		pending.Reset()
	}
	return commands
}

var (
	scriptExec  = regexp.MustCompile(`^(?:\[[^\]]*\]\s*)*!?\s*exec\s+servesim\s`)
	scriptShell = regexp.MustCompile(`^(?:\[[^\]]*\]\s*)*!?\s*exec\s+sh\s+-c\s+'(.*)'\s*&?$`)
)

// scriptCommands returns the servesim commands the end-to-end scripts run,
// by their words, with $SHARED/ written ../shared/ and $REPO/ dropped, as
// the manual spells paths from the repository root.
func scriptCommands(t *testing.T) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	for _, dir := range []string{"testdata/script", "testdata/script-shared"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
		require.NoError(t, err)
		for _, file := range files {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, "-- ") {
					break // the archive's files follow
				}
				var commands [][]string
				if loc := scriptExec.FindStringIndex(line); loc != nil {
					words := append([]string{"servesim"}, shellWords(line[loc[1]:])...)
					if words[len(words)-1] == "&" { // run in the background
						words = words[:len(words)-1]
					}
					commands = append(commands, words)
				} else if m := scriptShell.FindStringSubmatch(line); m != nil {
					// A shell line, for what exec cannot do: globs, pipes.
					commands = servesimCommands(strings.ReplaceAll(m[1], "''", "'"))
				}
				for _, words := range commands {
					normalizeScriptWords(words)
					found[strings.Join(words, "\x00")] = true
				}
			}
		}
	}
	return found
}

// normalizeScriptWords writes a script's $SHARED/ as ../shared/ and drops
// its $REPO/, as the manual spells paths from the repository root.
func normalizeScriptWords(words []string) {
	for i, w := range words {
		for _, shared := range []string{"$SHARED/", "${SHARED}/"} {
			w = strings.ReplaceAll(w, shared, "../shared/")
		}
		for _, repo := range []string{"$REPO/", "${REPO}/"} {
			w = strings.ReplaceAll(w, repo, "")
		}
		words[i] = w
	}
}

// notRunByScripts are the manual's commands that no end-to-end script runs,
// each with the reason; every other command must be run word for word by a
// script (testdata/script, or testdata/script-shared when it reads the
// public data).
var notRunByScripts = map[string]string{
	// docs/fleets-and-capacity.md, the worked week: a minute and more of work
	// on two cores (capacity 36 s, each simulate 9 s) for every go test.
	// capacity_over_time.txtar and fleet_autoscale.txtar run the same flags
	// on shorter traces.
	"servesim capacity --trace week.csv --service-model batched --ttft-slo 5 --tpot-slo 0.15 --attainment 0.95 --max-replicas 16 --max-sim-time 610000 --over-time 3600 --out-plan plan.csv --format table": "the worked week: 36 s",
	"servesim simulate --trace week.csv --service-model batched --ttft-slo 5 --tpot-slo 0.15 --max-sim-time 610000 --summary $policy --controller max -o run.json":                                          "the worked week: a shell loop over three policies, 9 s each",
	// docs/fleets-and-capacity.md, the worked day of per-pool autoscaling:
	// its simulate runs in fleet_disaggregated_day.txtar; the capacity
	// search over the day's 95,361 requests takes 33 s on two cores, and
	// capacity_disaggregated.txtar runs --disaggregated on a shorter trace.
	"servesim capacity --trace day.csv --service-model batched --ttft-slo 5 --tpot-slo 0.15 --attainment 0.95 --max-sim-time 200000 --disaggregated --controller max --format table": "the worked day: 33 s",
	// docs/fleets-and-capacity.md, the capacity plan per pool of the
	// worked day: the search over the day's 95,361 requests takes about a
	// minute on two cores, and the simulate reads the plans it writes;
	// capacity_disaggregated_over_time.txtar runs both on 20 minutes of a
	// synthetic day.
	"servesim capacity --trace day.csv --service-model batched --ttft-slo 5 --tpot-slo 0.15 --attainment 0.95 --max-sim-time 200000 --disaggregated --over-time 3600 --controller max --out-plan plan.csv --format table": "the worked day's plan per pool: 58 s",
	"servesim simulate --trace day.csv --service-model batched --ttft-slo 5 --tpot-slo 0.15 --max-sim-time 200000 --cold-start 300 --fleet pd-plan.json --autoscale static --summary -o out.json":                         "reads the plans of the worked day's capacity run (58 s)",
	// docs/bench-and-calibrate.md, the walk-through: it reads the result
	// files of a clone of github.com/LambdaLabsML/vllm-benchmark, which the
	// tests do not fetch; calibrate_fit.txtar fits files of the same kind.
	"servesim calibrate --gpu H100 --model Llama-3.1-8B-Instruct --max-num-seqs 256 --max-num-batched-tokens 2048 --bench results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json --bench results/prompt_20/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json --holdout results/prompt_40/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json --format table --out-gpu h100-fitted.json": "needs a clone of LambdaLabsML/vllm-benchmark",
	// The calibrate help's power example: its power log must have been kept
	// on a real server while the runs ran (matched by their dates);
	// internal/calibrate's tests fit powers from such logs.
	"servesim calibrate --bench c1.json --bench c8.json --power-log gpu.csv --out-gpu l4-fitted.json --out-profile fitted/profile.csv":                                                                                                                               "needs an nvidia-smi log of real runs",
	"servesim capacity --service-model batched --gpu h100-fitted.json --model Llama-3.1-8B-Instruct --trace ../shared/data/azure2023/AzureLLMInferenceTrace_conv.csv --max-elapsed 600 --ttft-slo 2 --tpot-slo 0.2 --attainment 0.9 --controller max --format table": "needs the card the walk-through fits",
}

// TestManualCommandsRun: every servesim command the manual shows is run,
// word for word, by an end-to-end script, or is listed in notRunByScripts
// with the reason.
func TestManualCommandsRun(t *testing.T) {
	t.Parallel()
	commands := manualCommands(t)
	require.Greater(t, len(commands), 40, "the manual's commands were not found")
	run := scriptCommands(t)
	listed := map[string]bool{}
	for _, c := range commands {
		key := strings.Join(c.words, " ")
		if _, ok := notRunByScripts[key]; ok {
			listed[key] = true
			continue
		}
		assert.True(t, run[strings.Join(c.words, "\x00")], "%s: no script in cmd/servesim/testdata runs %q: add it to a script (script-shared when it reads ../shared) or, with the reason, to notRunByScripts", c.where, key)
	}
	for key := range notRunByScripts {
		assert.True(t, listed[key], "notRunByScripts lists %q, which the manual no longer shows", key)
	}
	t.Logf("%d commands in the manual and the help examples; %d of them listed as run by no script", len(commands), len(notRunByScripts))
}

// TestReadmeIsAFrontPage keeps README.md the front page, under 250 lines:
// what servesim is, install, the two set-up commands, first runs and links;
// everything else belongs to a page of docs/.
func TestReadmeIsAFrontPage(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	readme := string(data)
	assert.Less(t, strings.Count(readme, "\n"), 250, "README.md: move the text to a page of docs/")
	for _, want := range []string{"make install", "make run ", "make test ", "](docs/index.md)"} {
		assert.Contains(t, readme, want)
	}
}
