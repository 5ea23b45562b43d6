#!/usr/bin/env python3
"""gecko_check.py - check a file against the Firefox Profiler's processed
profile format, as the profiler publishes it: the type Profile of
src/types/profile.ts in github.com/firefox-devtools/profiler at the
release whose PROCESSED_PROFILE_VERSION (src/app-logic/constants.ts) is
the file's meta.preprocessedProfileVersion, with the changes of
docs-developer/CHANGELOG-formats.md up to it.

usage: gecko_check.py FILE [--version N]

Checks, for version 70 (the version pyprof writes; --version N names
the version expected, default 70, and only 70's tables are known):
- meta has its required fields (interval, startTime, processType,
  product, stackwalk, version, preprocessedProfileVersion, markerSchema)
  and states the version expected; categories, when given, include a
  grey one (the default category, version 53) and each has at least one
  subcategory;
- shared has every table with every required column, and every column of
  a table is as long as the table's length;
- every index is in range: stacks' frames and prefixOffsets (0 for a
  root, else pointing back to an earlier stack: version 66), frames'
  funcs, categories, subcategories, libs, native symbols; funcs' names,
  sources and resources; sources' file names; threads' sample stacks,
  marker names and categories; every marker's data type has a schema;
- each thread's required fields are there, its samples' times ascend and
  its interval markers do not end before they start.
Prints one JSON line: per thread its name, pid, tid, sample count, first
and last time (ms), marker count, the function names of its samples'
leaf-to-root stacks, so that callers can check what ran when, and the
weight of its samples per category (a sample's category is its stack's,
derived as the profiler derives it: the stack's frame's category, or if
null its prefix's, a root's the grey default's):
    {"threads": [{"name": ..., "samples": N, "times": [...],
                  "stacks": [["leaf", ..., "root"], ...],
                  "categories": {"Python": W, "Native": W, ...},
                  "sample_categories": ["Python", ...],
                  "weights": [W, ...]}], ...}
Exit status 0 if valid, 1 with the first problems on stderr otherwise,
2 on usage.
"""
import json
import sys

REQUIRED_META = ("interval", "startTime", "processType", "product",
                 "stackwalk", "version", "preprocessedProfileVersion",
                 "markerSchema")

# Version 70's shared tables and their columns (profile.ts).
SHARED_TABLES = {
    "stackTable": ("frame", "prefixOffset"),
    "frameTable": ("address", "lib", "inlineDepth", "category",
                   "subcategory", "func", "nativeSymbol", "innerWindowID",
                   "line", "column", "originalLocation"),
    "funcTable": ("name", "isJS", "relevantForJS", "resource", "source",
                  "lineNumber", "columnNumber", "originalLocation"),
    "resourceTable": ("name", "host", "type"),
    "nativeSymbols": ("libIndex", "address", "name", "functionSize"),
    "sources": ("id", "filename", "startLine", "startColumn",
                "sourceMapURL", "content"),
    "sourceLocationTable": ("source", "line", "column"),
}

REQUIRED_THREAD = ("processType", "processStartupTime",
                   "processShutdownTime", "registerTime", "unregisterTime",
                   "pausedRanges", "name", "isMainThread", "pid", "tid",
                   "samples", "markers")
SAMPLES_COLUMNS = ("stack",)
MARKER_COLUMNS = ("data", "name", "startTime", "endTime", "phase",
                  "category")


class Problems(Exception):
    pass


def check(doc, version):
    bad = []

    def need(cond, what):
        if not cond:
            bad.append(what)
        return cond

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    def index(v, n, what, nullable=False, minus_one=False):
        if v is None and nullable:
            return
        if v == -1 and minus_one:
            return
        need(is_int(v) and 0 <= v < n, "%s: %r not in [0, %d)" % (what, v, n))

    def table(t, name, columns):
        if not need(isinstance(t, dict), "%s is not an object" % name):
            return 0
        n = t.get("length")
        if not need(is_int(n) and n >= 0, "%s.length missing" % name):
            return 0
        for c in columns:
            if need(c in t, "%s.%s missing" % (name, c)):
                need(isinstance(t[c], list) and len(t[c]) == n,
                     "%s.%s has %s entries, length is %d"
                     % (name, c, len(t[c]) if isinstance(t[c], list)
                        else "no", n))
        return n

    meta = doc.get("meta")
    if not need(isinstance(meta, dict), "no meta"):
        raise Problems(bad)
    for k in REQUIRED_META:
        need(k in meta, "meta.%s missing" % k)
    need(meta.get("preprocessedProfileVersion") == version,
         "meta.preprocessedProfileVersion is %r, not %d"
         % (meta.get("preprocessedProfileVersion"), version))
    need(isinstance(meta.get("interval"), (int, float))
         and meta.get("interval") > 0, "meta.interval not positive")
    cats = meta.get("categories")
    n_sub = []
    if cats is not None:
        need(any(c.get("color") == "grey" for c in cats),
             "no grey (default) category")
        for c in cats:
            subs = c.get("subcategories")
            need(isinstance(c.get("name"), str) and isinstance(subs, list)
                 and len(subs) > 0, "category %r malformed" % c)
            n_sub.append(len(subs) if isinstance(subs, list) else 0)
    schemas = set()
    for s in meta.get("markerSchema", []):
        need(isinstance(s.get("name"), str) and
             isinstance(s.get("display"), list) and
             isinstance(s.get("fields"), list),
             "marker schema %r lacks name, display or fields" % s)
        schemas.add(s.get("name"))
    libs = doc.get("libs")
    need(isinstance(libs, list), "libs is not a list")
    n_libs = len(libs) if isinstance(libs, list) else 0

    shared = doc.get("shared")
    if not need(isinstance(shared, dict), "no shared"):
        raise Problems(bad)
    strings = shared.get("stringArray")
    need(isinstance(strings, list) and all(isinstance(s, str)
                                           for s in strings),
         "shared.stringArray is not a list of strings")
    n_str = len(strings) if isinstance(strings, list) else 0
    n = {}
    for name, cols in SHARED_TABLES.items():
        n[name] = table(shared.get(name), "shared." + name, cols)
    if bad:
        raise Problems(bad)

    st, ft, fn = shared["stackTable"], shared["frameTable"], shared["funcTable"]
    for i in range(n["stackTable"]):
        index(st["frame"][i], n["frameTable"], "stackTable.frame[%d]" % i)
        off = st["prefixOffset"][i]
        need(is_int(off) and 0 <= off <= i,
             "stackTable.prefixOffset[%d] is %r" % (i, off))
    for i in range(n["frameTable"]):
        index(ft["func"][i], n["funcTable"], "frameTable.func[%d]" % i)
        index(ft["lib"][i], n_libs, "frameTable.lib[%d]" % i,
              minus_one=True)
        index(ft["nativeSymbol"][i], n["nativeSymbols"],
              "frameTable.nativeSymbol[%d]" % i, nullable=True)
        index(ft["originalLocation"][i], n["sourceLocationTable"],
              "frameTable.originalLocation[%d]" % i, nullable=True)
        cat = ft["category"][i]
        if cats is not None and cat is not None:
            index(cat, len(cats), "frameTable.category[%d]" % i)
            if is_int(cat) and 0 <= cat < len(cats):
                index(ft["subcategory"][i], n_sub[cat],
                      "frameTable.subcategory[%d]" % i, nullable=True)
        line = ft["line"][i]
        need(line is None or (is_int(line) and line >= 0),
             "frameTable.line[%d] is %r" % (i, line))
    for i in range(n["funcTable"]):
        index(fn["name"][i], n_str, "funcTable.name[%d]" % i)
        index(fn["source"][i], n["sources"], "funcTable.source[%d]" % i,
              nullable=True)
        index(fn["resource"][i], n["resourceTable"],
              "funcTable.resource[%d]" % i, minus_one=True)
        need(isinstance(fn["isJS"][i], bool), "funcTable.isJS[%d]" % i)
    for i in range(n["sources"]):
        index(shared["sources"]["filename"][i], n_str,
              "sources.filename[%d]" % i)
    for i in range(n["resourceTable"]):
        index(shared["resourceTable"]["name"][i], n_str,
              "resourceTable.name[%d]" % i)

    threads = doc.get("threads")
    if not need(isinstance(threads, list), "threads is not a list"):
        raise Problems(bad)
    for ti, t in enumerate(threads):
        where = "threads[%d]" % ti
        for k in REQUIRED_THREAD:
            need(k in t, "%s.%s missing" % (where, k))
        if bad:
            raise Problems(bad)
        need(isinstance(t["pid"], str), "%s.pid is not a string" % where)
        s = t["samples"]
        ns = table(s, where + ".samples", SAMPLES_COLUMNS)
        need(s.get("weightType") in ("samples", "tracing-ms", "bytes"),
             "%s.samples.weightType is %r" % (where, s.get("weightType")))
        w = s.get("weight")
        need(w is None or (isinstance(w, list) and len(w) == ns),
             "%s.samples.weight is not null or of the length" % where)
        times = s.get("time")
        if times is None and "timeDeltas" in s:
            times, acc = [], 0
            for d in s["timeDeltas"]:
                acc += d
                times.append(acc)
        if need(isinstance(times, list) and len(times) == ns,
                "%s.samples has no time column of its length" % where):
            for i in range(1, ns):
                if not need(times[i - 1] <= times[i],
                            "%s.samples.time[%d] %r < [%d] %r"
                            % (where, i, times[i], i - 1, times[i - 1])):
                    break
        for i in range(ns if isinstance(s.get("stack"), list) else 0):
            index(s["stack"][i], n["stackTable"],
                  "%s.samples.stack[%d]" % (where, i), nullable=True)
        m = t["markers"]
        nm = table(m, where + ".markers", MARKER_COLUMNS)
        for i in range(nm if not bad else 0):
            index(m["name"][i], n_str, "%s.markers.name[%d]" % (where, i))
            if cats is not None:
                index(m["category"][i], len(cats),
                      "%s.markers.category[%d]" % (where, i))
            ph = m["phase"][i]
            need(ph in (0, 1, 2, 3), "%s.markers.phase[%d] is %r"
                 % (where, i, ph))
            if ph == 1:
                need(m["startTime"][i] <= m["endTime"][i],
                     "%s.markers[%d] ends before it starts" % (where, i))
            d = m["data"][i]
            if d is not None:
                need(d.get("type") in schemas,
                     "%s.markers.data[%d] type %r has no schema"
                     % (where, i, d.get("type")))
    if bad:
        raise Problems(bad)


def summary(doc):
    sh = doc["shared"]
    st, ft, fn = sh["stackTable"], sh["frameTable"], sh["funcTable"]
    names = sh["stringArray"]

    def stack(s):
        out = []
        while s is not None:
            out.append(names[fn["name"][ft["func"][st["frame"][s]]]])
            off = st["prefixOffset"][s]
            s = s - off if off else None
        return out

    # A stack's category as the profiler derives it: its frame's, or
    # when that is null its prefix's, or for a root the grey (default)
    # category's.
    cats = doc["meta"].get("categories") or []
    grey = next((i for i, c in enumerate(cats) if c["color"] == "grey"), 0)
    stack_cat = []
    for i in range(st["length"]):
        c = ft["category"][st["frame"][i]]
        if c is None:
            off = st["prefixOffset"][i]
            c = stack_cat[i - off] if off else grey
        stack_cat.append(c)

    def cat_name(c):
        return cats[c]["name"] if c < len(cats) else str(c)

    threads = []
    for t in doc["threads"]:
        s = t["samples"]
        weights = s.get("weight") or [1] * s["length"]
        by_cat = {}
        sample_cats = []
        for x, w in zip(s["stack"], weights):
            name = cat_name(stack_cat[x] if x is not None else grey)
            by_cat[name] = by_cat.get(name, 0) + w
            sample_cats.append(name)
        threads.append({
            "name": t["name"], "pid": t["pid"], "tid": t["tid"],
            "samples": s["length"], "times": s["time"],
            "markers": t["markers"]["length"],
            "stacks": [stack(x) if x is not None else [] for x in s["stack"]],
            # per category name, the weight of the samples in it
            "categories": by_cat,
            "sample_categories": sample_cats, "weights": weights,
        })
    return {"version": doc["meta"]["preprocessedProfileVersion"],
            "startTime": doc["meta"]["startTime"], "threads": threads}


def main(argv):
    version = 70
    if "--version" in argv:
        i = argv.index("--version")
        version = int(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    try:
        doc = json.load(open(argv[0], encoding="utf-8"))
        check(doc, version)
    except Problems as e:
        for p in e.args[0][:20]:
            sys.stderr.write("gecko_check: %s\n" % p)
        return 1
    except ValueError as e:
        sys.stderr.write("gecko_check: not JSON: %s\n" % e)
        return 1
    print(json.dumps(summary(doc)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
