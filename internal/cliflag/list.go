package cliflag

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// List is a comma-separated list flag: `--scheduler static,chunked`,
// `--scheduler "static, chunked"` or the flag given again, which appends.
// Spaces around an item are dropped, and an item in double quotes may hold
// a comma (`--profile '"a,b.csv",c.csv'`). The first value given replaces
// the default.
type List struct {
	items   *[]string
	item    string // what one item is, for "expected a comma-separated list of ..."
	changed bool
}

// AddList defines a comma-separated list flag on cmd; item describes one
// element in error messages (for example "schedulers").
func AddList(cmd *cobra.Command, items *[]string, name string, defaults []string, item, usage string) {
	*items = defaults
	cmd.Flags().Var(&List{items: items, item: item}, name, usage)
}

// Items returns the list's items.
func (v *List) Items() []string { return *v.items }

// Set parses one occurrence of the flag.
func (v *List) Set(s string) error {
	items, err := SplitList(s)
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
func (v *List) String() string {
	if v.items == nil || len(*v.items) == 0 {
		return ""
	}
	return "[" + strings.Join(*v.items, ",") + "]"
}

// Type names the value's kind in help.
func (v *List) Type() string { return "list" }

// Expected says what the flag accepts.
func (v *List) Expected() string {
	return "a comma-separated list of " + v.item + " (double-quote an item that holds a comma)"
}

// ErrBadList is SplitList's error: the flag error says what was expected.
var ErrBadList = errors.New("not a comma-separated list")

// SplitList splits a comma-separated list: items are trimmed of spaces, a
// double-quoted item may hold commas and doubled quotes (CSV quoting), and
// a line break separates items like a comma. The empty string is the empty
// list; an empty item is kept (as "") for the command to reject.
func SplitList(s string) ([]string, error) {
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
			return nil, ErrBadList
		}
		for _, item := range record {
			items = append(items, strings.TrimSpace(item))
		}
	}
}
