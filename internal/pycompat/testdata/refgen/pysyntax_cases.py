"""Development tool (CI never runs it; the project needs no Python).

Write Python's float()/int()/csv.DictReader/json.loads results for the
parser unit tests of internal/pycompat. usage: pysyntax_cases.py OUT_JSON"""
import csv, io, json, math, sys

def num(f):
    if math.isnan(f): return "nan"
    if math.isinf(f): return "inf" if f > 0 else "-inf"
    return repr(f)

strings = ["5", " 5 ", "\t5\n", "\x855\xa0", "\u20001", "\x1c5", "5\x1c", "1_000", "1_000.5", "_1", "1_", "1__0",
    "1e3", "1E-3", "1e", "1e+", ".5", "5.", ".", "+.5", "-5", "+-1", "--1", "inf", "-Infinity", "+nan", "NaN", "nAn",
    "infinity", "infinit", "0x10", "1e1_0", "1_e5", "1._5", "1_.5", "007", "\x0b7\x0c", "\u0663", "\u0661\u0662",
    "\U0001D7D9", "1.5", "", " ", "1\x00", "1e400", "-1e400", "1e-400", "99999999999999999999", "-9223372036854775809",
    "9223372036854775807", "0_0", "+0", "-0", "1 2", "١_٢", "true", "7.0", " -7 "]
out = {"float": {}, "int": {}, "csv": [], "json": []}
for s in strings:
    try: out["float"][s] = num(float(s))
    except Exception as e: out["float"][s] = "ERR"
    try: out["int"][s] = str(int(s))
    except Exception as e: out["int"][s] = "ERR"

docs = ["a,b\r\n1,2\r\n", "a,b\n1,2\n", "a,b\r1,2\r", "a,b\n1,2", "a,b\n\n1,2\n\n", "\na,b\n1,2\n",
    'a,b\n"x,y","q""z"\n', 'a,b\n"multi\r\nline",2\n', 'a,b\n"ab"c,d\n', 'a,b\nx"y,z\n', 'a,b\n"unterminated\n',
    "\ufeffa,b\n1,2\n", "a,a,b\n1,2,3\n", "a,b\n1\n", "a,b\n1,2,3,4\n", "a,b\n1,2\r\n\r\n3,4", "a,b\n1\x00,2\n",
    "a,b\n,\n", "a,b\n \n", "", "\n\n", 'a,b\n"",""\n', 'a,b\n"a"\r\n', 'a,b\n1,"2\n',
    'a,b\n"12"3,x\n', 'a,b\n"12"3"4,x\n', 'a,b\n1,"open\n2,3\n']
for d in docs:
    r = csv.DictReader(io.StringIO(d, newline=""))
    try:
        rows = [list(map(lambda kv: [kv[0], kv[1]], row.items())) for row in r]
        out["csv"].append({"doc": d, "fieldnames": r.fieldnames, "rows": rows})
    except Exception as e:
        out["csv"].append({"doc": d, "error": str(e)})

jdocs = ['{}', '{"a": 1}', '{"a": 1, "a": 2, "b": 3}', '{"a": NaN, "b": Infinity, "c": -Infinity}', '[1, 2.0, -0, 1E2, 1e400]',
    '{"a": 01}', '{"a": 1.}', '{"a": [1,]}', '{"a": "\\u00e9\\ud83d\\ude00"}', '{"a": "tab\there"}', ' {"a": true} \n',
    '{"a": null, "b": false}', '{"a": 123456789012345678901234567890}', '"s"', '[]', 'nan', '-', '{"a": -Infinity1}',
    '\ufeff{}', '{"a":1}x', '{"a": "\\x"}', '{"a": "\\u12"}', '{"a": -}', '{"a" 1}', '{1: 2}', '{"a": .5}']
def enc(v):
    if isinstance(v, bool): return ["bool", v]
    if isinstance(v, int): return ["int", str(v)]
    if isinstance(v, float): return ["float", num(v)]
    if isinstance(v, str): return ["str", v]
    if v is None: return ["null"]
    if isinstance(v, list): return ["list", [enc(x) for x in v]]
    return ["dict", [[k, enc(x)] for k, x in v.items()]]
for d in jdocs:
    try: out["json"].append({"doc": d, "value": enc(json.loads(d))})
    except Exception as e: out["json"].append({"doc": d, "error": type(e).__name__})
with open(sys.argv[1], "w") as fh:
    json.dump(out, fh, indent=1, ensure_ascii=True)
    fh.write("\n")
