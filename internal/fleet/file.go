package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/plant"
	"servesim/internal/profile"
)

// MaxFileBytes caps the size of a fleet file.
const MaxFileBytes = 1 << 20

// fileFields are the fields a group of a fleet file may have, in the order
// they are checked.
var fileFields = []string{"name", "profile", "replicas", "scheduler", "controller", "role"}

// FileError is a bad fleet file: it names the file and, when the fault is
// in a group, the group (index and name) and the field.
type FileError struct {
	File  string
	Group int    // group index, -1 for the file as a whole
	Name  string // group name, when it has one
	Field string // field name, empty for the group as a whole
	Err   error
}

func (e *FileError) Error() string {
	msg := "fleet file " + e.File
	if e.Group >= 0 {
		msg += fmt.Sprintf(": group %d", e.Group)
		if e.Name != "" {
			msg += " (" + strconv.Quote(e.Name) + ")"
		}
	}
	if e.Field != "" {
		msg += ": field " + strconv.Quote(e.Field)
	}
	return msg + ": " + e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }

// GroupDefaults are the values a group of a fleet file takes for a field it
// does not give: the command line's.
type GroupDefaults struct {
	Profile     *profile.Profile
	ProfilePath string
	Replicas    int
	Scheduler   string
	Controller  string
}

// Bounds are an elastic fleet's bounds for one group of its fleet file
// (ReadElasticFile): nil where the group does not give them.
type Bounds struct {
	MinReplicas, MaxReplicas *int
	// Autoscale is the group's own autoscaler, as --autoscale takes it
	// (a schedule or oracle file relative to the fleet file's folder made
	// a path from the working directory); "" takes --autoscale.
	Autoscale string
}

// ProfileLoader loads the profile at path.
type ProfileLoader func(path string) (*profile.Profile, error)

// ReadFile reads the fleet file at path (see ParseFile).
func ReadFile(path string, defaults GroupDefaults, load ProfileLoader) ([]Group, error) {
	groups, _, err := readFile(path, defaults, load, false)
	return groups, err
}

// ReadElasticFile reads the fleet file of an elastic fleet (simulate
// --autoscale): ReadFile's, whose groups may also give min_replicas (a
// whole number from 0 to MaxReplicas) and max_replicas (from 1), their
// bounds, returned in group order.
func ReadElasticFile(path string, defaults GroupDefaults, load ProfileLoader) ([]Group, []Bounds, error) {
	return readFile(path, defaults, load, true)
}

// readFile reads a fleet file, an elastic fleet's when elastic.
func readFile(path string, defaults GroupDefaults, load ProfileLoader, elastic bool) ([]Group, []Bounds, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, &FileError{File: path, Group: -1, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, nil, &FileError{File: path, Group: -1, Err: err}
	}
	if len(data) > MaxFileBytes {
		return nil, nil, &FileError{File: path, Group: -1, Err: fmt.Errorf("larger than %d bytes", MaxFileBytes)}
	}
	return parseFile(path, data, defaults, load, elastic)
}

// ParseFile parses a fleet file: a JSON list of groups, each an object
// with any of the fields name (a non-empty string, unique; default
// "group<index>"), profile (a profile CSV path, relative to the file's
// folder; a folder means the bundle's l4_profile.csv in it, as with
// --profile), replicas (a whole number from 1 to MaxReplicas), scheduler
// and controller (as --scheduler and --controller take them). A missing field
// takes its value from defaults; load loads a profile. Any other field, a
// value of the wrong type or range, a profile that fails to load, an empty
// list or a fleet of more than MaxReplicas replicas is a *FileError.
func ParseFile(path string, data []byte, defaults GroupDefaults, load ProfileLoader) ([]Group, error) {
	groups, _, err := parseFile(path, data, defaults, load, false)
	return groups, err
}

// ParseElasticFile is ParseFile for an elastic fleet (ReadElasticFile).
func ParseElasticFile(path string, data []byte, defaults GroupDefaults, load ProfileLoader) ([]Group, []Bounds, error) {
	return parseFile(path, data, defaults, load, true)
}

// parseFile parses a fleet file, an elastic fleet's when elastic.
func parseFile(path string, data []byte, defaults GroupDefaults, load ProfileLoader, elastic bool) ([]Group, []Bounds, error) {
	fileErr := func(err error) error { return &FileError{File: path, Group: -1, Err: err} }
	var raw []json.RawMessage
	if err := strictUnmarshal(data, &raw); err != nil {
		return nil, nil, fileErr(fmt.Errorf("expected a JSON list of groups: %w", err))
	}
	if len(raw) == 0 {
		return nil, nil, fileErr(errors.New("expected a JSON list of at least one group"))
	}
	groups := make([]Group, 0, len(raw))
	var bounds []Bounds
	names := map[string]int{}
	total := 0
	for i, item := range raw {
		g, b, err := parseGroup(path, i, item, defaults, load, elastic)
		if err != nil {
			return nil, nil, err
		}
		if first, dup := names[g.Name]; dup {
			return nil, nil, &FileError{File: path, Group: i, Name: g.Name, Field: "name",
				Err: fmt.Errorf("name %q is taken by group %d", g.Name, first)}
		}
		names[g.Name] = i
		if total += g.Replicas; total > MaxReplicas {
			return nil, nil, &FileError{File: path, Group: i, Name: g.Name, Field: "replicas",
				Err: fmt.Errorf("the fleet exceeds %d replicas", MaxReplicas)}
		}
		groups = append(groups, g)
		bounds = append(bounds, b)
	}
	if err := checkFileRoles(path, groups); err != nil {
		return nil, nil, err
	}
	return groups, bounds, nil
}

// parseGroup parses group i.
func parseGroup(path string, i int, item json.RawMessage, defaults GroupDefaults, load ProfileLoader, elastic bool) (Group, Bounds, error) {
	var bounds Bounds
	g := Group{
		Name:        "group" + strconv.Itoa(i),
		Replicas:    defaults.Replicas,
		Profile:     defaults.Profile,
		ProfilePath: defaults.ProfilePath,
		Scheduler:   defaults.Scheduler,
		Controller:  defaults.Controller,
	}
	fail := func(field string, err error) (Group, Bounds, error) {
		return Group{}, Bounds{}, &FileError{File: path, Group: i, Name: g.Name, Field: field, Err: err}
	}
	var fields map[string]json.RawMessage
	if err := strictUnmarshal(item, &fields); err != nil || fields == nil {
		return fail("", errors.New("expected an object with fields name, profile, replicas, scheduler, controller, role"))
	}
	twice := duplicateKey(item)
	if twice == "name" {
		return fail("name", errors.New("given twice"))
	}
	str := func(field string) (string, bool, error) {
		value, ok := fields[field]
		if !ok {
			return "", false, nil
		}
		var s string
		if err := strictUnmarshal(value, &s); err != nil || s == "" {
			return "", false, fmt.Errorf("%s: expected a non-empty string", value)
		}
		return s, true, nil
	}
	if name, ok, err := str("name"); err != nil {
		return fail("name", err)
	} else if ok {
		g.Name = name
	}
	if twice != "" {
		return fail(twice, errors.New("given twice"))
	}
	keys := slices.Sorted(maps.Keys(fields))
	known, expected := fileFields, "name, profile, replicas, scheduler, controller or role"
	if elastic {
		known = append(slices.Clone(fileFields), "min_replicas", "max_replicas", "autoscale")
		expected = "name, profile, replicas, min_replicas, max_replicas, autoscale, scheduler, controller or role"
	}
	for _, key := range keys {
		if !slices.Contains(known, key) {
			return fail(key, errors.New("unknown field: expected "+expected))
		}
	}
	if p, ok, err := str("profile"); err != nil {
		return fail("profile", err)
	} else if ok {
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		p = profile.ResolvePath(p) // a bundle folder: its l4_profile.csv, as --profile
		prof, err := load(p)
		if err != nil {
			return fail("profile", err)
		}
		g.Profile, g.ProfilePath = prof, p
	}
	if value, ok := fields["replicas"]; ok {
		least := 1.0
		if elastic {
			least = 0 // its initial size: the autoscaler may start the rest
		}
		var n float64
		if err := strictUnmarshal(value, &n); err != nil || n != math.Trunc(n) || n < least || n > MaxReplicas {
			return fail("replicas", fmt.Errorf("%s: expected a whole number from %v to %d", value, least, MaxReplicas))
		}
		g.Replicas = int(n)
	}
	for _, bound := range []struct {
		field string
		least int
		dst   **int
	}{{"min_replicas", 0, &bounds.MinReplicas}, {"max_replicas", 1, &bounds.MaxReplicas}} {
		if value, ok := fields[bound.field]; ok {
			var n float64
			if err := strictUnmarshal(value, &n); err != nil || n != math.Trunc(n) || n < float64(bound.least) || n > MaxReplicas {
				return fail(bound.field, fmt.Errorf("%s: expected a whole number from %d to %d", value, bound.least, MaxReplicas))
			}
			v := int(n)
			*bound.dst = &v
		}
	}
	if s, ok, err := str("scheduler"); err != nil {
		return fail("scheduler", err)
	} else if ok {
		if _, err := plant.NewScheduler(s); err != nil {
			return fail("scheduler", err)
		}
		g.Scheduler = s
	}
	if c, ok, err := str("controller"); err != nil {
		return fail("controller", err)
	} else if ok {
		if _, err := plant.NewController(c); err != nil {
			return fail("controller", err)
		}
		g.Controller = c
	}
	if value, ok := fields["role"]; ok {
		var s string
		if err := strictUnmarshal(value, &s); err != nil {
			return fail("role", fmt.Errorf("%s: expected %s", value, strings.Join(RoleNames, ", ")))
		}
		role, err := ParseRole(s)
		if err != nil || s == "" {
			return fail("role", fmt.Errorf("%s: expected %s", value, strings.Join(RoleNames, ", ")))
		}
		g.Role = role
	}
	if policy, ok, err := str("autoscale"); err != nil {
		return fail("autoscale", err)
	} else if ok {
		if bounds.Autoscale, err = groupAutoscaler(path, policy); err != nil {
			return fail("autoscale", err)
		}
	}
	return g, bounds, nil
}

// groupAutoscaler checks the autoscaler policy of a group of the elastic
// fleet file at path and returns it with a schedule or oracle file
// relative to the file's folder made a path from the working directory.
// The plain oracle plans a fleet of one group and is refused.
func groupAutoscaler(path, policy string) (string, error) {
	if IsPlannedOracle(policy) {
		return "", fmt.Errorf("%q: the plain oracle plans a fleet of one group: expected a policy of the group's own (schedule:FILE, oracle:FILE, queue, utilization, exec: or static)", policy)
	}
	if err := ParseAutoscaler(policy); err != nil {
		return "", err
	}
	name, file, _ := strings.Cut(policy, ":")
	if (name == ScheduleName || name == OracleName) && !filepath.IsAbs(file) {
		policy = name + ":" + filepath.Join(filepath.Dir(path), file)
	}
	return policy, nil
}

// duplicateKey returns the first key the JSON object obj gives twice (as
// decoded: "a" and "\u0061" are one key), or "": a map decoded from it
// would keep the last value of such a key without a word.
func duplicateKey(obj []byte) string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		key, _ := tok.(string)
		if seen[key] {
			return key
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

// strictUnmarshal decodes one JSON value and rejects trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the value")
	}
	return nil
}

// checkFileRoles checks the roles of a fleet file's groups: a fleet with a
// prefill or a decode group is disaggregated, and then has both and no
// mixed group.
func checkFileRoles(path string, groups []Group) error {
	if !Disaggregated(groups) {
		return nil
	}
	for i, g := range groups {
		if g.Role != RolePrefill && g.Role != RoleDecode {
			return &FileError{File: path, Group: i, Name: g.Name, Field: "role",
				Err: fmt.Errorf("%q in a disaggregated fleet: expected prefill or decode", RoleMixed)}
		}
	}
	if err := CheckRoles(groups); err != nil {
		return &FileError{File: path, Group: -1, Field: "role", Err: err}
	}
	return nil
}
