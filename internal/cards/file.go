package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"servesim/internal/limits"
)

// MaxFileBytes is the most a card file may hold; LoadGPU and LoadModel
// read no further, and ParseGPU and ParseModel refuse more.
const MaxFileBytes = limits.MiB

// ResolveGPU returns the built-in GPU card of that name or alias
// (BuiltinGPU), else reads the card file at that path (LoadGPU). A name
// that is neither, and is no path (it has no slash and no .json
// extension), is an *UnknownCardError; so is "a100", which could mean
// either A100 card (Ambiguous lists them).
func ResolveGPU(nameOrPath string) (GPU, error) {
	if g, ok := BuiltinGPU(nameOrPath); ok {
		return g, nil
	}
	if isFile(nameOrPath) {
		return LoadGPU(nameOrPath)
	}
	return GPU{}, &UnknownCardError{Kind: "gpu", Name: nameOrPath, Known: GPUNames(),
		Ambiguous: gpuAmbiguous[strings.ToLower(nameOrPath)]}
}

// ResolveModel returns the built-in model card of that name or alias
// (BuiltinModel), else reads the card file at that path (LoadModel). A
// name that is neither, and is no path (it has no slash and no .json
// extension), is an *UnknownCardError.
func ResolveModel(nameOrPath string) (Model, error) {
	if m, ok := BuiltinModel(nameOrPath); ok {
		return m, nil
	}
	if isFile(nameOrPath) {
		return LoadModel(nameOrPath)
	}
	return Model{}, &UnknownCardError{Kind: "model", Name: nameOrPath, Known: ModelNames()}
}

// isFile reports whether a card name is to be read as a file: one that
// exists (or cannot be looked at: reading it says why), or one written
// as a path, so that a mistyped path says the file is missing.
func isFile(nameOrPath string) bool {
	if nameOrPath == "" {
		return false
	}
	if _, err := os.Stat(nameOrPath); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return strings.ContainsRune(nameOrPath, '/') || strings.ContainsRune(nameOrPath, filepath.Separator) ||
		strings.EqualFold(filepath.Ext(nameOrPath), ".json")
}

// LoadGPU reads a GPU card file (ParseGPU), at most MaxFileBytes.
func LoadGPU(path string) (GPU, error) {
	data, err := readCard("gpu", path)
	if err != nil {
		return GPU{}, err
	}
	return ParseGPU(path, data)
}

// LoadModel reads a model card file (ParseModel), at most MaxFileBytes.
func LoadModel(path string) (Model, error) {
	data, err := readCard("model", path)
	if err != nil {
		return Model{}, err
	}
	return ParseModel(path, data)
}

// gpuFields and modelFields are the JSON names of the cards' fields, in
// the order of their types' fields.
var (
	gpuFields = []string{"name", "memory_gb", "memory_bandwidth_gb_per_s", "peak_dense_tflops", "board_power_w",
		"memory_efficiency", "compute_efficiency", "iteration_overhead_s"}
	modelFields = []string{"name", "weight_gb", "layers", "hidden_size", "attention_heads", "kv_heads", "head_size", "dtype"}
)

// ParseGPU reads a GPU card file's bytes; file names it in errors. The
// card is one JSON object of the GPU type's fields, by their JSON names:
// memory_gb, memory_bandwidth_gb_per_s, peak_dense_tflops and
// board_power_w are required; memory_efficiency, compute_efficiency and
// iteration_overhead_s default to DefaultMemoryEfficiency,
// DefaultComputeEfficiency and DefaultIterationOverheadS; name defaults
// to the file's base name without its extension. An unknown field, a
// field given twice, a value of the wrong JSON type, anything after the
// object or more than MaxFileBytes is an error, and so is a card that
// does not validate (GPU.Validate). Errors are *FieldError values naming
// the file.
func ParseGPU(file string, data []byte) (GPU, error) {
	g := GPU{
		Name:               baseName(file),
		MemoryEfficiency:   DefaultMemoryEfficiency,
		ComputeEfficiency:  DefaultComputeEfficiency,
		IterationOverheadS: DefaultIterationOverheadS,
	}
	p := parser{kind: "gpu", file: file, known: gpuFields}
	raw, err := p.object(data)
	if err != nil {
		return GPU{}, err
	}
	err = errors.Join(
		p.str(raw, "name", false, &g.Name),
		p.number(raw, "memory_gb", true, &g.MemoryGB),
		p.number(raw, "memory_bandwidth_gb_per_s", true, &g.MemoryBandwidthGBps),
		p.number(raw, "peak_dense_tflops", true, &g.PeakTFLOPS),
		p.number(raw, "board_power_w", true, &g.BoardPowerW),
		p.number(raw, "memory_efficiency", false, &g.MemoryEfficiency),
		p.number(raw, "compute_efficiency", false, &g.ComputeEfficiency),
		p.number(raw, "iteration_overhead_s", false, &g.IterationOverheadS),
	)
	if err != nil {
		return GPU{}, first(err)
	}
	if err := g.Validate(); err != nil {
		return GPU{}, p.inFile(err, raw)
	}
	return g, nil
}

// ParseModel reads a model card file's bytes; file names it in errors.
// The card is one JSON object of the Model type's fields, by their JSON
// names, all required but name, which defaults to the file's base name
// without its extension. An unknown field, a field given twice, a value
// of the wrong JSON type (the integers must be written as integers),
// anything after the object or more than MaxFileBytes is an error, and
// so is a card that does not validate (Model.Validate). Errors are
// *FieldError values naming the file.
func ParseModel(file string, data []byte) (Model, error) {
	m := Model{Name: baseName(file)}
	p := parser{kind: "model", file: file, known: modelFields}
	raw, err := p.object(data)
	if err != nil {
		return Model{}, err
	}
	err = errors.Join(
		p.str(raw, "name", false, &m.Name),
		p.number(raw, "weight_gb", true, &m.WeightGB),
		p.integer(raw, "layers", &m.Layers),
		p.integer(raw, "hidden_size", &m.HiddenSize),
		p.integer(raw, "attention_heads", &m.AttentionHeads),
		p.integer(raw, "kv_heads", &m.KVHeads),
		p.integer(raw, "head_size", &m.HeadSize),
		p.str(raw, "dtype", true, &m.Dtype),
	)
	if err != nil {
		return Model{}, first(err)
	}
	if err := m.Validate(); err != nil {
		return Model{}, p.inFile(err, raw)
	}
	return m, nil
}

// readCard reads a card file whole, at most MaxFileBytes.
func readCard(kind, path string) ([]byte, error) {
	fail := func(why string, err error) error { return &FieldError{Kind: kind, File: path, Why: why, Err: err} }
	file, err := os.Open(path)
	if err != nil {
		return nil, fail("cannot be read: "+unwrapPath(err).Error(), err)
	}
	defer file.Close()
	if info, err := file.Stat(); err == nil && info.IsDir() {
		return nil, fail("is a folder, not a card file", nil)
	}
	data, err := limits.ReadAll(file, MaxFileBytes)
	var tooLarge *limits.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, fail(tooLargeWhy(tooLarge.Size), err)
	}
	if err != nil {
		return nil, fail("cannot be read: "+unwrapPath(err).Error(), err)
	}
	return data, nil
}

// tooLargeWhy says that a card file is over the cap; size is -1 when it
// is not known.
func tooLargeWhy(size int64) string {
	why := "larger than the " + limits.FormatBytes(MaxFileBytes) + " cap on a card file"
	if size >= 0 {
		why = limits.FormatBytes(size) + ": " + why
	}
	return why
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// baseName is a card's default name: the file's base name without its
// extension.
func baseName(file string) string {
	base := filepath.Base(file)
	if base == "." || base == string(filepath.Separator) {
		return ""
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// first is the first of the errors errors.Join joined.
func first(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()[0]
	}
	return err
}

// parser reads the JSON object of one card file.
type parser struct {
	kind  string   // "gpu" or "model"
	file  string   // the file's name for errors
	known []string // the card's JSON field names
}

// fail is an error about the file as a whole.
func (p *parser) fail(why string) error { return &FieldError{Kind: p.kind, File: p.file, Why: why} }

// fieldFail is an error about one field.
func (p *parser) fieldFail(field, value, why string) error {
	return &FieldError{Kind: p.kind, File: p.file, Field: field, Value: value, Why: why}
}

// object reads data as one JSON object of known fields, each at most
// once, with nothing after it, and returns its values by name.
func (p *parser) object(data []byte) (map[string]json.RawMessage, error) {
	if int64(len(data)) > MaxFileBytes {
		return nil, p.fail(tooLargeWhy(int64(len(data))))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, p.fail("empty file: expected a JSON object of the card's fields")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, p.syntax(data, err)
	}
	if tok != json.Delim('{') {
		return nil, p.fail("expected a JSON object of the card's fields, got " + jsonKind(firstValue(data)))
	}
	raw := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, p.syntax(data, err)
		}
		key, _ := tok.(string) // an object's keys are strings
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, p.syntax(data, err)
		}
		switch {
		case !slices.Contains(p.known, key):
			return nil, &FieldError{Kind: p.kind, File: p.file, Field: key, Unknown: true,
				Why: "expected one of " + strings.Join(p.known, ", ")}
		case raw[key] != nil:
			return nil, p.fieldFail(key, "", "given twice")
		}
		raw[key] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, p.syntax(data, err)
	}
	if rest := firstValue(data[dec.InputOffset():]); len(rest) > 0 {
		line := bytes.Count(data[:len(data)-len(rest)], []byte("\n")) + 1
		return nil, p.fail(fmt.Sprintf("trailing data after the JSON object on line %d", line))
	}
	return raw, nil
}

// syntax describes a JSON syntax error, with its line.
func (p *parser) syntax(data []byte, err error) error {
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		offset := min(max(syntaxErr.Offset, 0), int64(len(data)))
		line := bytes.Count(data[:offset], []byte("\n")) + 1
		return p.fail(fmt.Sprintf("invalid JSON on line %d: %v", line, err))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return p.fail("invalid JSON: the file ends inside the object")
	}
	return p.fail("invalid JSON: " + err.Error())
}

// str reads a string field into dst.
func (p *parser) str(raw map[string]json.RawMessage, field string, required bool, dst *string) error {
	value, ok, err := p.value(raw, field, required, '"', "a string")
	if err != nil || !ok {
		return err
	}
	return json.Unmarshal(value, dst) // a string token, already checked
}

// number reads a number field into dst.
func (p *parser) number(raw map[string]json.RawMessage, field string, required bool, dst *float64) error {
	value, ok, err := p.value(raw, field, required, '0', "a number")
	if err != nil || !ok {
		return err
	}
	x, err := strconv.ParseFloat(string(value), 64)
	if err != nil {
		return p.fieldFail(field, string(value), "out of range")
	}
	*dst = x
	return nil
}

// integer reads a required integer field into dst.
func (p *parser) integer(raw map[string]json.RawMessage, field string, dst *int) error {
	value, ok, err := p.value(raw, field, true, '0', "an integer")
	if err != nil || !ok {
		return err
	}
	n, err := strconv.Atoi(string(value))
	if errors.Is(err, strconv.ErrRange) {
		return p.fieldFail(field, string(value), "out of range")
	}
	if err != nil {
		return p.fieldFail(field, string(value), "expected an integer")
	}
	*dst = n
	return nil
}

// value returns a field's JSON text when its first byte is of the kind
// wanted ('"' a string, '0' a number); ok is false for an optional field
// that is absent.
func (p *parser) value(raw map[string]json.RawMessage, field string, required bool, kind byte, want string) (json.RawMessage, bool, error) {
	value, ok := raw[field]
	if !ok {
		if required {
			return nil, false, p.fieldFail(field, "", "missing")
		}
		return nil, false, nil
	}
	if got := jsonKind(value); got != jsonKind([]byte{kind}) {
		return nil, false, p.fieldFail(field, valueText(value), "expected "+want+", got "+got)
	}
	return value, true, nil
}

// inFile names the file in a Validate error, with the field's text as the
// file gives it.
func (p *parser) inFile(err error, raw map[string]json.RawMessage) error {
	var fieldErr *FieldError
	if !errors.As(err, &fieldErr) {
		return err
	}
	out := *fieldErr
	out.File = p.file
	if value, ok := raw[out.Field]; ok {
		out.Value = valueText(value)
	}
	return &out
}

// valueText is a JSON value's text for a message: a string's contents,
// else the JSON text.
func valueText(value json.RawMessage) string {
	var s string
	if jsonKind(value) == "a string" && json.Unmarshal(value, &s) == nil {
		return s
	}
	return string(value)
}

// jsonKind names the JSON type of a value by its first byte.
func jsonKind(value []byte) string {
	if len(value) == 0 {
		return "nothing"
	}
	switch value[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// firstValue is data from its first byte that is not white space.
func firstValue(data []byte) []byte { return bytes.TrimLeft(data, " \t\r\n") }
