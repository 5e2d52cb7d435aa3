package main

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// listValue is a comma-separated list flag: `--scheduler static,chunked`,
// `--scheduler "static, chunked"` or the flag given again, which appends.
// Spaces around an item are dropped, and an item in double quotes may hold
// a comma (`--profile '"a,b.csv",c.csv'`). The first value given replaces
// the default.
type listValue struct {
	items   *[]string
	item    string // what one item is, for "expected a comma-separated list of ..."
	changed bool
}

// addListFlag defines a comma-separated list flag on cmd; item describes one
// element in error messages (for example "schedulers").
func addListFlag(cmd *cobra.Command, items *[]string, name string, defaults []string, item, usage string) {
	*items = defaults
	cmd.Flags().Var(&listValue{items: items, item: item}, name, usage)
}

// Set parses one occurrence of the flag.
func (v *listValue) Set(s string) error {
	items, err := splitList(s)
	if err != nil {
		return err
	}
	if !v.changed {
		*v.items = nil
		v.changed = true
	}
	*v.items = append(*v.items, items...)
	return nil
}

// String returns the items as help shows a default: [a,b]; nothing for an
// empty list.
func (v *listValue) String() string {
	if v.items == nil || len(*v.items) == 0 {
		return ""
	}
	return "[" + strings.Join(*v.items, ",") + "]"
}

// Type names the value's kind in help.
func (v *listValue) Type() string { return "list" }

// Expected says what the flag accepts.
func (v *listValue) Expected() string {
	return "a comma-separated list of " + v.item + " (double-quote an item that holds a comma)"
}

// errBadList is splitList's error: the flag error says what was expected.
var errBadList = errors.New("not a comma-separated list")

// splitList splits a comma-separated list: items are trimmed of spaces, a
// double-quoted item may hold commas and doubled quotes (CSV quoting), and
// a line break separates items like a comma. The empty string is the empty
// list; an empty item is kept (as "") for the command to reject.
func splitList(s string) ([]string, error) {
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	var items []string
	for {
		record, err := r.Read()
		if err == io.EOF {
			return items, nil
		}
		if err != nil {
			return nil, errBadList
		}
		for _, item := range record {
			items = append(items, strings.TrimSpace(item))
		}
	}
}
