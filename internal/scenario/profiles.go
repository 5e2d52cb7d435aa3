package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"servesim/internal/limits"
)

// MaxProfilesBytes bounds a profiles file, which lists a few engines: a
// larger one fails with a *limits.TooLargeError before it is read whole,
// and a NUL byte (not JSON) stops the reading at once.
const MaxProfilesBytes = 16 * limits.MiB

// profileFields are the seed's EngineProfile field names, in its order.
var profileFields = []string{
	"name", "prefill_tokens_per_ms", "prefix_cache_hit_efficiency",
	"base_tpot_ms", "batch_tpot_slope_ms", "max_batch_slots",
}

// ParseProfiles reads a JSON list of engine profiles whose objects have
// exactly the seed's field names (name, prefill_tokens_per_ms,
// prefix_cache_hit_efficiency, base_tpot_ms, batch_tpot_slope_ms,
// max_batch_slots), in any order. It fails closed: an unknown, missing,
// repeated or null field, a value of the wrong type, a value that fails
// EngineProfile.Validate, a repeated profile name or an empty list is an
// error naming the file, the line, the profile and the field. name is what
// errors call the input.
func ParseProfiles(r io.Reader, name string) ([]EngineProfile, error) {
	data, err := io.ReadAll(limits.NewText(r, MaxProfilesBytes, MaxProfilesBytes))
	var lineErr *limits.LineError
	if errors.As(err, &lineErr) {
		return nil, fmt.Errorf("profiles %s line %d: %s", name, lineErr.Line, lineErr.Reason)
	}
	if err != nil {
		return nil, fmt.Errorf("profiles %s: %w", name, err)
	}
	p := &profilesParser{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	return p.parse()
}

// profilesParser walks the JSON tokens of one profiles file.
type profilesParser struct {
	name string
	data []byte
	dec  *json.Decoder
}

// line is the 1-based line of byte offset off.
func (p *profilesParser) line(off int64) int {
	off = min(max(off, 0), int64(len(p.data)))
	return bytes.Count(p.data[:off], []byte("\n")) + 1
}

// next returns the offset of the next token at or after off, skipping
// whitespace and the separators the decoder consumes silently.
func (p *profilesParser) next(off int64) int64 {
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

// errorf formats an error located at byte offset off.
func (p *profilesParser) errorf(off int64, format string, args ...any) error {
	return fmt.Errorf("profiles %s line %d: %s", p.name, p.line(off), fmt.Sprintf(format, args...))
}

// syntaxError locates a decoding error.
func (p *profilesParser) syntaxError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return p.errorf(syn.Offset, "invalid JSON: %v", syn)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.errorf(int64(len(p.data)), "invalid JSON: unexpected end of input")
	}
	return p.errorf(p.dec.InputOffset(), "invalid JSON: %v", err)
}

// expectDelim reads the next token and reports whether it is delim.
func (p *profilesParser) expectDelim(delim json.Delim) (bool, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return false, p.syntaxError(err)
	}
	d, ok := tok.(json.Delim)
	return ok && d == delim, nil
}

func (p *profilesParser) parse() ([]EngineProfile, error) {
	if ok, err := p.expectDelim('['); err != nil {
		return nil, err
	} else if !ok {
		return nil, p.errorf(p.dec.InputOffset(), "expected a JSON list of engine profiles")
	}
	var profiles []EngineProfile
	firstUse := make(map[string]int)
	for p.dec.More() {
		index := len(profiles) + 1
		profile, nameLine, err := p.parseProfile(index)
		if err != nil {
			return nil, err
		}
		if first, dup := firstUse[profile.Name]; dup {
			return nil, fmt.Errorf("profiles %s line %d: profile %d %q: name: already used by profile %d", p.name, nameLine, index, profile.Name, first)
		}
		firstUse[profile.Name] = index
		profiles = append(profiles, profile)
	}
	if _, err := p.dec.Token(); err != nil { // the closing ']'
		return nil, p.syntaxError(err)
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errorf(p.dec.InputOffset(), "unexpected data after the list of profiles")
	}
	if len(profiles) == 0 {
		return nil, fmt.Errorf("profiles %s: no engine profiles in the list", p.name)
	}
	return profiles, nil
}

// rawField is one field's undecoded value and where it starts.
type rawField struct {
	value json.RawMessage
	off   int64
}

// parseProfile reads the index-th profile object and returns it with the
// line of its name field.
func (p *profilesParser) parseProfile(index int) (EngineProfile, int, error) {
	start := p.next(p.dec.InputOffset())
	if ok, err := p.expectDelim('{'); err != nil {
		return EngineProfile{}, 0, err
	} else if !ok {
		return EngineProfile{}, 0, p.errorf(start, "profile %d: expected an object with fields %s", index, strings.Join(profileFields, ", "))
	}
	fields := make(map[string]rawField, len(profileFields))
	for p.dec.More() {
		keyOff := p.next(p.dec.InputOffset())
		tok, err := p.dec.Token()
		if err != nil {
			return EngineProfile{}, 0, p.syntaxError(err)
		}
		key, _ := tok.(string) // inside an object the decoder only yields string keys
		if !isProfileField(key) {
			return EngineProfile{}, 0, p.errorf(keyOff, "profile %d: unknown field %q: expected %s", index, key, strings.Join(profileFields, ", "))
		}
		if _, dup := fields[key]; dup {
			return EngineProfile{}, 0, p.errorf(keyOff, "profile %d: field %q given twice", index, key)
		}
		var raw json.RawMessage
		valueOff := p.next(p.dec.InputOffset())
		if err := p.dec.Decode(&raw); err != nil {
			return EngineProfile{}, 0, p.syntaxError(err)
		}
		fields[key] = rawField{value: raw, off: valueOff}
	}
	if _, err := p.dec.Token(); err != nil { // the closing '}'
		return EngineProfile{}, 0, p.syntaxError(err)
	}
	return p.buildProfile(index, start, fields)
}

func isProfileField(key string) bool {
	for _, f := range profileFields {
		if f == key {
			return true
		}
	}
	return false
}

// buildProfile decodes and validates the fields of the index-th profile.
func (p *profilesParser) buildProfile(index int, start int64, fields map[string]rawField) (EngineProfile, int, error) {
	label := fmt.Sprintf("profile %d", index)
	nameField, ok := fields["name"]
	if !ok {
		return EngineProfile{}, 0, p.errorf(start, "%s: missing field \"name\"", label)
	}
	var prof EngineProfile
	if err := json.Unmarshal(nameField.value, &prof.Name); err != nil || isNull(nameField.value) {
		return EngineProfile{}, 0, p.errorf(nameField.off, "%s: name %s: expected a string", label, nameField.value)
	}
	if strings.TrimSpace(prof.Name) == "" || strings.IndexFunc(prof.Name, unicode.IsControl) >= 0 {
		return EngineProfile{}, 0, p.errorf(nameField.off, "%s: name %s: expected a non-blank name without control characters", label, nameField.value)
	}
	label = fmt.Sprintf("profile %d %q", index, prof.Name)
	for _, key := range profileFields[1:] {
		if _, ok := fields[key]; !ok {
			return EngineProfile{}, 0, p.errorf(start, "%s: missing field %q", label, key)
		}
	}
	numbers := []struct {
		key string
		dst *float64
	}{
		{"prefill_tokens_per_ms", &prof.PrefillTokensPerMS},
		{"prefix_cache_hit_efficiency", &prof.PrefixCacheHitEfficiency},
		{"base_tpot_ms", &prof.BaseTPOTMS},
		{"batch_tpot_slope_ms", &prof.BatchTPOTSlopeMS},
	}
	for _, num := range numbers {
		f := fields[num.key]
		v, err := strconv.ParseFloat(string(f.value), 64)
		if err != nil || !isNumber(f.value) {
			return EngineProfile{}, 0, p.errorf(f.off, "%s: %s %s: expected a finite number", label, num.key, f.value)
		}
		*num.dst = v
	}
	slots := fields["max_batch_slots"]
	n, err := strconv.Atoi(string(slots.value))
	if err != nil {
		return EngineProfile{}, 0, p.errorf(slots.off, "%s: max_batch_slots %s: expected a whole number of slots (at least 1)", label, slots.value)
	}
	prof.MaxBatchSlots = n
	if err := prof.Validate(); err != nil {
		var fe *FieldError
		off := start
		if errors.As(err, &fe) {
			off = fields[fe.Field].off
		}
		return EngineProfile{}, 0, p.errorf(off, "%s: %v", label, err)
	}
	return prof, p.line(nameField.off), nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// isNumber reports whether raw is a JSON number (not a string or literal).
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}
