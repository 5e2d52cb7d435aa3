package main

import (
	"embed"
	"strings"
)

// helpFiles hold the long help and the examples of every command, as they
// read in a terminal: help/COMMAND.txt and help/COMMAND.example.txt.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help is the text of help/name.txt without its final newline.
func help(name string) string {
	text, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("no help file " + name) // the files are embedded: a test reads every one
	}
	return strings.TrimSuffix(string(text), "\n")
}
