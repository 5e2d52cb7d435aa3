package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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

// proseLines returns the lines of a Markdown text that are not inside a
// fenced code block, without their inline code spans.
func proseLines(text string) []markdownLine {
	var lines []markdownLine
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
		lines = append(lines, markdownLine{text: codeSpan.ReplaceAllString(line, ""), num: i + 1})
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
	fence := ""
	for _, line := range strings.Split(text, "\n") {
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

var helpManualPage = regexp.MustCompile(`docs/[\w/.-]+\.md`)

// TestHelpFilesNameManualPages: a command's help that sends the reader to
// the manual names a page that exists (and never the README, which is the
// front page only).
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
		for _, page := range helpManualPage.FindAllString(text, -1) {
			pages++
			_, err := os.Stat(filepath.Join(repoRoot, strings.TrimSuffix(page, ".")))
			assert.NoError(t, err, "%s names %s", name, page)
		}
	}
	assert.Positive(t, pages)
}
