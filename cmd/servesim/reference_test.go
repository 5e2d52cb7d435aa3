package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"servesim/internal/testsupport"
)

// The generated command reference: one Markdown page per command in
// docs/reference and one man page per command in docs/man, written from
// the command tree itself (its Short, Long and Example texts and every
// flag's usage and default) by cobra's doc generator. The generator lives in
// the tests because the tree is built in package main; `make docs` runs
// TestReferenceIsCurrent with -update to rewrite the pages.
const (
	referenceDir = "../../docs/reference"
	manDir       = "../../docs/man"
)

// writeReference writes the Markdown reference into mdDir and the man pages
// into manDir, both of which must exist. The output depends on nothing but
// the command tree: no date, no version, no machine.
func writeReference(mdDir, manPagesDir string) error {
	s, _, _ := testStreams("")
	root := newRootCmd(s, nil, commands())
	// cobra/doc stamps every page with the day it ran unless told not to.
	root.DisableAutoGenTag = true
	// cobra adds its completion command when the binary runs; the
	// reference documents it too.
	root.InitDefaultCompletionCmd()
	if err := doc.GenMarkdownTree(root, mdDir); err != nil {
		return err
	}
	if err := doc.GenManTree(root, &doc.GenManHeader{Section: "1", Date: &time.Time{}, Source: "servesim", Manual: "servesim manual"}, manPagesDir); err != nil {
		return err
	}
	// A man page's header carries a date; the pages have none (the zero
	// date cobra was given), so that they change only when a command does.
	pages, err := filepath.Glob(filepath.Join(manPagesDir, "*.1"))
	if err != nil {
		return err
	}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			return err
		}
		data = bytes.Replace(data, []byte(`"`+time.Time{}.Format("Jan 2006")+`"`), []byte(`""`), 1)
		if err := os.WriteFile(page, data, 0o644); err != nil {
			return err
		}
	}
	return addReferenceIndex(root, mdDir)
}

// addReferenceIndex writes mdDir/README.md: the list of the generated pages,
// so that the reference folder opens on something that links them all.
func addReferenceIndex(root *cobra.Command, mdDir string) error {
	var b strings.Builder
	b.WriteString("# Command reference\n\n")
	b.WriteString("Generated from the command tree by `make docs`; do not edit these pages by hand.\n")
	b.WriteString("Every command's flags, their defaults and their one-line meaning are here; the\n")
	b.WriteString("[manual](../index.md) explains what they do. The same pages as man pages are in\n")
	b.WriteString("[../man](../man) (`man -l docs/man/servesim-simulate.1`).\n\n")
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c != root && (!c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand()) {
			return
		}
		depth := strings.Count(c.CommandPath(), " ")
		b.WriteString(strings.Repeat("  ", depth) + "- [" + c.CommandPath() + "](" + strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md): " + c.Short + "\n")
		children := c.Commands()
		sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
		for _, child := range children {
			visit(child)
		}
	}
	visit(root)
	return os.WriteFile(filepath.Join(mdDir, "README.md"), []byte(b.String()), 0o644)
}

// TestReferenceIsCurrent regenerates the command reference into a temporary
// folder and compares it with docs/reference and docs/man, file for file:
// a changed flag, default or help text without `make docs` fails here.
// With -update it rewrites both folders instead.
func TestReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	if testsupport.Updating() {
		for _, dir := range []string{referenceDir, manDir} {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.MkdirAll(dir, 0o755))
		}
		require.NoError(t, writeReference(referenceDir, manDir))
		return
	}
	tmp := t.TempDir()
	md, man := filepath.Join(tmp, "reference"), filepath.Join(tmp, "man")
	require.NoError(t, os.Mkdir(md, 0o755))
	require.NoError(t, os.Mkdir(man, 0o755))
	require.NoError(t, writeReference(md, man))
	for _, pair := range [][2]string{{md, referenceDir}, {man, manDir}} {
		want, got := readTree(t, pair[0]), readTree(t, pair[1])
		shown := strings.TrimPrefix(pair[1], "../../")
		for name, text := range want {
			old, ok := got[name]
			if !assert.True(t, ok, "%s/%s is missing: run make docs", shown, name) {
				continue
			}
			assert.True(t, old == text, "%s/%s is stale: run make docs", shown, name)
		}
		for name := range got {
			_, ok := want[name]
			assert.True(t, ok, "%s/%s is no command's page any more: run make docs", shown, name)
		}
	}
}

// readTree returns the files of dir by name, an empty map when dir is
// missing.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return files
	}
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = string(data)
	}
	return files
}
