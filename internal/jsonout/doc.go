// Package jsonout is servesim's JSON encoder for results: one pass over a
// value, appended to a buffer, written in chunks (Chunks) or streamed
// while it is encoded (Stream) for documents of hundreds of megabytes.
//
// It writes what encoding/json writes for the same value, following the
// same rules for struct tags (a name, "-", omitempty, omitzero with an
// IsZero method), embedded structs (promoted fields; a shallower field
// hides deeper ones of its name and, at one depth, a tagged one hides
// untagged ones), maps (keys sorted; string and integer keys) and numbers
// (the shortest form that reads back, 1e-7 and 1e+21 switching to
// exponents), except in these ways:
//
//   - NaN and the infinities are written as null (encoding/json fails), so
//     every JSON reader can read a result whose metrics are undefined.
//   - A nil slice is written as [] (encoding/json writes null).
//   - HTML characters (<, >, &) are not escaped.
//   - Object is a JSON object whose members keep their order.
//   - A json.RawMessage is written as it is, compacted or re-indented to
//     fit the layout (encoding/json compacts it), and escaped HTML in it
//     stays escaped.
//   - Chunks and Stream indent by two spaces per level, as
//     json.Indent does, except that an array of scalars, and an object of
//     scalars that is an element of an array, are written on one line
//     with ", " and ": " between members: a trajectory is one line per
//     series, a table of records one line per record.
//
// It refuses (an *EncodeError, and Streamable is false) what it would
// otherwise write differently from encoding/json:
//
//   - a type implementing json.Marshaler or encoding.TextMarshaler (on
//     the value or on a pointer to it), json.RawMessage apart: their
//     methods are not called;
//   - a field with the ",string" option;
//   - two members of one name at one depth where neither is tagged, or
//     both are (encoding/json silently drops them all);
//
// and, like encoding/json, channels, functions, complex numbers and maps
// with other keys.
package jsonout
