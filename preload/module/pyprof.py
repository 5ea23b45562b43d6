"""pyprof - labels from the program's own code, for the pyprof profiler.

    import pyprof

    with pyprof.labels(endpoint="/api/users", tenant="acme"):
        handle(request)          # every sample taken here carries both

    @pyprof.labels(job="reindex")
    def reindex(): ...           # plain functions and `async def` alike

    pyprof.current_labels()      # {'endpoint': '/api/users', ...}

Every CPU, wall and heap sample taken while labels are in force carries
them as pprof string labels (`go tool pprof -tagfocus endpoint=/api/users`,
`pyprof top --tag endpoint=/api/users`). Nested blocks add to and override
the labels around them and put them back on the way out, exceptions
included.

Where labels live: on Python 3.7+ in a contextvars.ContextVar, so each
asyncio task sees the labels of the context it was created in and its own
changes, never another task's, and a thread started inside a block does
not inherit them unless the program copies the context
(contextvars.copy_context().run). On 2.7 and 3.6, which have no
contextvars, they belong to the thread.

Rules (checked whether or not the profiler is there, so that a program
behaves the same in both cases):
  - names are str (TypeError otherwise), not empty, without NUL, and none
    of the names pyprof sets itself (RESERVED: ValueError);
  - values never raise: those that are not str are converted with str();
    a NUL becomes U+FFFD;
  - with the profiler, what samples carry is made to fit: text that
    cannot be encoded as UTF-8 (a lone surrogate) is replaced with
    U+FFFD, and when the labels in force would pass MAX_BYTES bytes
    encoded (each name and value in UTF-8 plus one byte) the longest
    values are cut and end with CUT_MARK; past MAX_LABELS labels, or
    when names alone do not fit, labels are left out (the longest names
    first). stats() counts each of these.

Without the profiler's library in the process (the program was not
started by `pyprof record` or with LD_PRELOAD=libpyprof.so) entering and
leaving a block does nothing but the checks, and current_labels() is
always {}. This module has no compiled part: it finds the library's
functions (pyprof_labels_*) with ctypes, and the library's samplers read
the labels from the interpreter's own structures (see the library's
preload/sample/labels.h).
"""
import codecs
import functools
import sys

__all__ = ["labels", "current_labels", "enabled", "stats", "MAX_LABELS",
           "MAX_BYTES", "CUT_MARK", "RESERVED"]

MAX_LABELS = 64
MAX_BYTES = 1024
CUT_MARK = u"\u2026"  # the end of a value cut to fit MAX_BYTES
RESERVED = frozenset(("pid", "thread_id", "thread_name", "process",
                      "command", "native", "gil", "opcode", "cpu_state"))

_PY2 = sys.version_info[0] == 2
_text = basestring if _PY2 else str  # noqa: F821 (2.7's name)

try:
    import contextvars
except ImportError:
    contextvars = None

# The value in force is None or a tuple (encoded, names): the labels
# encoded as the library reads them (name NUL value NUL ..., names in
# UTF-8 byte order) and a dict of them. A block's labels, checked, are a
# _Spec, one per distinct (name, value) tuple (_specs); each _Spec keeps
# the value it puts in force around each encoding it has met (derived),
# so entering a block costs two dictionary look-ups, one of them keyed by
# a bytes object whose hash Python caches.
_specs = {}
_CACHE_MAX = 8192
_MISSING = object()
_CUT = CUT_MARK.encode("utf-8")
_FFFD = u"\ufffd"
# each character that cannot be encoded (a lone surrogate) becomes U+FFFD
# (as bytes: the UTF-8 encoder takes only ASCII text from a handler)
codecs.register_error("pyprof.fffd", lambda e: (
    _FFFD.encode("utf-8") * (e.end - e.start), e.end))

# What had to be changed so that labels never raise (stats()): counted
# once per label set built, not per entry (a block entered again with the
# same labels is not built again).
_stats = {"values_replaced": 0, "values_cut": 0, "labels_dropped": 0}


class _Spec(object):
    __slots__ = ("items", "derived")

    def __init__(self, items):
        self.items = items
        self.derived = {}


def _utf8(s, what):
    if not _PY2 or isinstance(s, unicode):  # noqa: F821
        try:
            return s.encode("utf-8")
        except UnicodeError:
            raise ValueError("pyprof.labels: %s %r is not valid text "
                             "(it cannot be encoded as UTF-8)" % (what, s))
    return s


def _value_utf8(v):
    """A value in UTF-8, what cannot be encoded replaced (U+FFFD)."""
    try:
        if _PY2 and not isinstance(v, unicode):  # noqa: F821
            v.decode("utf-8")  # 2.7's str: bytes, checked as they are
            return v
        return v.encode("utf-8")
    except UnicodeError:
        _stats["values_replaced"] += 1
        if _PY2 and not isinstance(v, unicode):  # noqa: F821
            return v.decode("utf-8", "replace").encode("utf-8")
        return v.encode("utf-8", "pyprof.fffd")  # a lone surrogate


def _cut(b, n):
    """b cut to at most n bytes with CUT_MARK, on a UTF-8 boundary."""
    n -= len(_CUT)
    ba = bytearray(b)
    while n > 0 and (ba[n] & 0xC0) == 0x80:
        n -= 1
    return bytes(b[:max(n, 0)]) + _CUT


def _fit(pairs):
    """pairs (name, value), UTF-8, made to fit MAX_LABELS and MAX_BYTES:
    labels left out (longest names first) while even their names do not
    fit, then the longest values cut to one common length."""
    keep = sorted(pairs, key=lambda kv: len(kv[0]))
    least = len(_CUT)
    while keep and (len(keep) > MAX_LABELS or sum(
            len(k) + min(len(v), least) + 2 for k, v in keep) > MAX_BYTES):
        keep.pop()
        _stats["labels_dropped"] += 1

    def size(cap):
        return sum(len(k) + 2 + (len(v) if len(v) <= cap else cap)
                   for k, v in keep)

    if size(max([len(v) for k, v in keep] or [0])) > MAX_BYTES:
        lo, hi = least, max(len(v) for k, v in keep)
        while lo < hi:  # the largest cap that fits
            mid = (lo + hi + 1) // 2
            if size(mid) <= MAX_BYTES:
                lo = mid
            else:
                hi = mid - 1
        out = []
        for k, v in keep:
            if len(v) > lo:
                v = _cut(v, lo)
                _stats["values_cut"] += 1
            out.append((k, v))
        keep = out
    return sorted(keep)


def _check(items):
    """The block's (name, value) pairs checked, values made str."""
    out = []
    for k, v in items:
        if not isinstance(k, _text):
            raise TypeError("pyprof.labels: a label name must be str, "
                            "not %s" % type(k).__name__)
        if not k:
            raise ValueError("pyprof.labels: a label name cannot be empty")
        if k in RESERVED:
            raise ValueError("pyprof.labels: %r is a label pyprof sets "
                             "itself; reserved: %s"
                             % (k, ", ".join(sorted(RESERVED))))
        if "\0" in k:
            raise ValueError("pyprof.labels: label names cannot contain "
                             "NUL: %r" % (k,))
        _utf8(k, "label name")
        if not isinstance(v, _text):
            v = str(v)
        if "\0" in v:
            v = v.replace("\0", _FFFD if not _PY2 or isinstance(
                v, unicode) else _FFFD.encode("utf-8"))  # noqa: F821
            _stats["values_replaced"] += 1
        out.append((k, v))
    return tuple(out)


def _spec_of(items):
    try:
        spec = _specs.get(items)
    except TypeError:  # a value that cannot be hashed: checked each time
        return _Spec(_check(items))
    if spec is None:
        checked = _check(items)
        spec = _specs.get(checked) or _Spec(checked)
        if len(_specs) >= _CACHE_MAX:
            _specs.clear()
        _specs[items] = spec
    return spec


def _encode(names):
    """The labels as samplers read them; never raises for what the
    program passed (_fit, _value_utf8)."""
    pairs = sorted((_utf8(k, "label name"), _value_utf8(v))
                   for k, v in names.items())
    if len(pairs) > MAX_LABELS or sum(
            len(k) + len(v) + 2 for k, v in pairs) > MAX_BYTES:
        pairs = _fit(pairs)
    return b"".join(k + b"\0" + v + b"\0" for k, v in pairs)


def _derive(cur, spec):
    """The value in force inside a block of spec's labels, around cur."""
    key = cur[0] if cur is not None else None
    r = spec.derived.get(key, _MISSING)
    if r is _MISSING:
        names = dict(cur[1]) if cur is not None else {}
        names.update(spec.items)
        r = (_encode(names), names) if names else None
        if len(spec.derived) >= 256:
            spec.derived.clear()
        spec.derived[key] = r
    return r


def _functions(ctypes, lib):
    """The library's functions, and PyThreadState_Get, typed for ctypes."""
    c = ctypes
    ptr, lng, i32 = c.c_void_p, c.c_long, c.c_int
    protos = (
        (c.pythonapi, "PyThreadState_Get", ptr, ()),
        (lib, "pyprof_labels_find", lng, (ptr, ptr, lng)),
        (lib, "pyprof_labels_setup", i32,
         (i32, ptr, c.c_longlong, lng, lng, ptr, ptr)),
        (lib, "pyprof_labels_read", lng, (ptr, c.c_char_p, lng)),
        (lib, "pyprof_labels_thread", i32, (ptr, ptr)),
    )
    fns = {}
    for where, name, restype, argtypes in protos:
        fn = getattr(where, name)
        fn.restype, fn.argtypes = restype, argtypes
        fns[name.replace("pyprof_labels_", "")] = fn
    fns["ts"] = fns.pop("PyThreadState_Get")

    ts, c_read, c_setup = fns["ts"], fns["read"], fns["setup"]

    def read_now():
        """What a sampler would read on this thread now."""
        buf = ctypes.create_string_buffer(MAX_BYTES)
        n = c_read(ts(), buf, MAX_BYTES)  # before buf.raw is taken
        return buf.raw[:n]

    def setup(kind, var, ts_context):
        """Tells the library where to read; whether it will."""
        return c_setup(kind, id(var) if var is not None else None,
                       hash(var) if var is not None else 0, ts_context,
                       tuple.__basicsize__, id(tuple), id(bytes)) == 0

    fns["read_now"], fns["setup"] = read_now, setup
    return fns


def _setup_context(fns, var):
    """Where this interpreter keeps a thread's current context, found by
    asking the library to look for two fresh contexts while each runs;
    then the library is told where to read, and the whole path checked."""
    ts, find = fns["ts"], fns["find"]

    def offsets(ctx):
        t, out, start = ts(), [], 0
        while True:
            off = find(t, id(ctx), start)
            if off < 0:
                return out
            out.append(off)
            start = off + 8

    c1, c2 = contextvars.Context(), contextvars.Context()
    o2 = set(c2.run(offsets, c2))
    common = [o for o in c1.run(offsets, c1) if o in o2]
    if not common or not fns["setup"](1, var, common[0]):
        return False

    # The check: a value set in a context that also holds 40 other
    # variables (so the lookup goes through more than one kind of node)
    # must read back as it was encoded.
    probe = {"pyprof.check": "ok", "n": "1"}
    value = (_encode(probe), probe)
    others = [contextvars.ContextVar("pyprof.check.%d" % i)
              for i in range(40)]

    def check():
        for i, o in enumerate(others):
            o.set(i)
        var.set(value)
        return fns["read_now"]() == value[0]

    return contextvars.Context().run(check)


def _setup_thread(fns):
    """2.7 and 3.6: the library keeps each thread's value; returns the
    function that tells it, or None."""
    ts, put = fns["ts"], fns["thread"]
    if not fns["setup"](2, None, 0):
        return None
    probe = {"pyprof.check": "ok"}
    value = (_encode(probe), probe)
    put(ts(), id(value))
    ok = fns["read_now"]() == value[0]
    put(ts(), None)
    if not ok:
        return None
    return lambda v: put(ts(), id(v) if v is not None else None)


def _connect():
    """Finds the library and sets it up; (mode, what mode needs), or
    (None, None) when labels cannot reach a profiler here."""
    try:
        import ctypes
        lib = ctypes.PyDLL(None)
        lib.pyprof_labels_setup
    except (ImportError, OSError, AttributeError):
        return None, None
    try:
        fns = _functions(ctypes, lib)
        if contextvars is not None:
            var = contextvars.ContextVar("pyprof.labels", default=None)
            if _setup_context(fns, var):
                return "context", var
        else:
            put = _setup_thread(fns)
            if put is not None:
                return "thread", put
    except Exception as e:  # never break the program over labels
        why = "%s: %s" % (type(e).__name__, e)
    else:
        why = "the interpreter's layout was not as expected"
    try:
        lib.pyprof_labels_off()
    except Exception:
        pass
    sys.stderr.write("pyprof: labels are off in this process (%s); "
                     "profiles have no labels from code\n" % why)
    return None, None


_mode, _how = _connect()

if _mode == "context":
    _var = _how
    _get = _var.get
    _set = _var.set
    _reset = _var.reset
elif _mode == "thread":
    import threading
    _local = threading.local()
    _put = _how

    def _get():
        return getattr(_local, "v", None)

    def _set(v):
        old = getattr(_local, "v", None)
        _local.v = v
        _put(v)
        return old

    def _reset(old):
        _local.v = old
        _put(old)


def enabled():
    """Whether labels reach a profiler in this process."""
    return _mode is not None


def stats():
    """What was changed so that labels never raise, as a new dict:
    values_replaced (a NUL, or text that could not be encoded, became
    U+FFFD), values_cut (ended with CUT_MARK to fit MAX_BYTES),
    labels_dropped (past MAX_LABELS, or names too long to fit). Counted
    once per label set built (a block entered again with the same labels
    in force around it is not counted again)."""
    return dict(_stats)


def current_labels():
    """The labels in force here, as a new dict ({} without the
    profiler)."""
    if _mode is None:
        return {}
    cur = _get()
    return dict(cur[1]) if cur is not None else {}


def _is_coroutine_function(fn):
    try:
        import inspect
        return inspect.iscoroutinefunction(fn)
    except AttributeError:  # before 3.5
        return False


_wrap_async = None
if sys.version_info >= (3, 5):
    # `async def` is a syntax error before 3.5: compiled only here
    _ns = {"functools": functools}
    exec("""
def _wrap_async(fn, spec, enter, leave):
    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        token = enter(spec)
        try:
            return await fn(*args, **kwargs)
        finally:
            leave(token)
    return wrapper
""", _ns)
    _wrap_async = _ns["_wrap_async"]


def _enter(spec):
    return _set(_derive(_get(), spec))


class labels(object):
    """labels(mapping=None, **labels): a context manager, and a decorator
    for plain functions and coroutine functions, that puts labels in force
    for what runs inside. A mapping allows names that are not Python
    identifiers (labels({"http.route": "/users/{id}"})); keyword labels
    are added after it."""

    __slots__ = ("_spec", "_token", "_more")

    def __init__(self, *mapping, **kw):
        if mapping:
            if len(mapping) > 1:
                raise TypeError("pyprof.labels() takes at most one "
                                "mapping, got %d" % len(mapping))
            items = tuple(dict(mapping[0]).items()) + tuple(kw.items())
        else:
            items = tuple(kw.items())
        self._spec = _spec_of(items)
        self._token = _MISSING
        self._more = None  # tokens of the same block entered again inside

    def __enter__(self):
        if _mode is not None:
            cur = _get()
            r = self._spec.derived.get(cur[0] if cur is not None else None,
                                       _MISSING)
            if r is _MISSING:
                r = _derive(cur, self._spec)
            token = _set(r)
            if self._token is _MISSING:
                self._token = token
            else:
                if self._more is None:
                    self._more = []
                self._more.append(token)
        return self

    def __exit__(self, *exc):
        if _mode is not None:
            if self._more:
                _reset(self._more.pop())
            else:
                token, self._token = self._token, _MISSING
                _reset(token)
        return False

    def __call__(self, fn):
        spec = self._spec
        if _mode is None:
            return fn
        if _wrap_async is not None and _is_coroutine_function(fn):
            return _wrap_async(fn, spec, _enter, _reset)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            token = _set(_derive(_get(), spec))
            try:
                return fn(*args, **kwargs)
            finally:
                _reset(token)
        return wrapper

    def __repr__(self):
        return "pyprof.labels(%s)" % ", ".join(
            "%s=%r" % kv for kv in self._spec.items)


# ---- the programs, when this module came with them (the wheel) ------------
#
# The wheel installs pyprof, pyprof-collector and libpyprof.so in
# pyprof_bin/ beside this module, and its `pyprof` and `pyprof-collector`
# commands are these functions: each replaces the Python process with the
# program (os.execv), so arguments, exit status and signals are the
# program's own. `python -m pyprof ARGS` is `pyprof ARGS`, for
# environments without the commands on PATH; `pyprof lib-path` prints the
# library's path for LD_PRELOAD. Nothing here runs at import.

def _bundled(prog):
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "pyprof_bin", "bin", prog)
    if not os.access(path, os.X_OK):
        sys.stderr.write("pyprof: %s is not installed beside this module "
                         "(%s); install the pyprof wheel, or run the "
                         "program from the Debian package or make install\n"
                         % (prog, path))
        sys.exit(2)
    return path


def _exec(prog):
    import os
    path = _bundled(prog)
    sys.stdout.flush()
    os.execv(path, [prog] + sys.argv[1:])


def _main_pyprof():
    _exec("pyprof")


def _main_collector():
    _exec("pyprof-collector")


if __name__ == "__main__":
    _main_pyprof()
