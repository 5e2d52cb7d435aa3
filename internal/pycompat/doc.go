// Package pycompat reads text exactly as the reference's Python does, for
// the files the reference itself reads (profile bundles and Azure traces):
//
//   - CSV: CSVReader is a port of CPython's _csv.c reader for the excel
//     dialect that csv.DictReader uses with open(newline="",
//     encoding="utf-8"), and Table is a whole file as csv.DictReader sees
//     it. Python reads the field "12"3 as 123 (a quote ends quoting, the
//     rest of the field follows), which encoding/csv does not.
//   - numbers: Float and Int are Python's float() and int() of a string
//     (Unicode whitespace and digits, underscores between digits,
//     inf/nan, integers of any size as Integer).
//   - JSON: ParseJSON is json.loads (NaN and Infinity, exact integers as
//     JSONInt, duplicate keys, key order kept in Object), with Python's
//     str(), repr(), float(), int() and tuple() of what it decodes.
//   - messages: Repr, FloatRepr and FormatG spell values as Python's
//     repr() and format(x, "g") do, so errors can quote the reference;
//     Float and Int quote at most 80 characters of a field where Python
//     quotes it whole.
//
// Formats servesim defines itself (request logs, engine-profile and fleet
// files) are read with encoding/csv and encoding/json rules instead: the
// reference never reads them. The package depends on the standard library
// only.
package pycompat
