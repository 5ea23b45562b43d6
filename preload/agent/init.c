/*
 * init.c - the constructor and destructor of libpyprof.so.
 *
 * The constructor runs in every process that has the library preloaded,
 * before main(). It decides, in this order:
 *   1. is this CPython? (dlsym of libpython's entry points in the global
 *      scope: found for a shared libpython and for a python executable that
 *      links it statically and exports its symbols). If not: return at once,
 *      having changed nothing and printed nothing.
 *   2. is the configuration valid? (config.c; a bad value prints one line
 *      and leaves profiling off)
 *   3. is this a CPython version we know? (pyabi.c; if not, one line, and
 *      off: we never guess a layout). 3.13+: the layout is read from the
 *      interpreter's own _Py_DebugOffsets (choose_abi), which also lets a
 *      minor released after this build be profiled when its block has a
 *      known shape
 * Then it installs the fault guard and the SIGPROF handler, registers the
 * fork handlers and starts the agent, which waits for the interpreter to be
 * initialized before arming any timer (Python is not initialized yet when
 * constructors run).
 *
 * LD_PRELOAD is left in the environment on purpose: Python children
 * (subprocess, multiprocessing spawn) are profiled too, and non-Python
 * children stay inert at step 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "base/clock.h"
#include "sample/asyncio.h"
#include "base/config.h"
#include "control.h"
#include "base/guard.h"
#include "base/log.h"
#include "pyprof/pyabi.h"
#include "cpython/pylife.h"
#include "refuse.h"
#include "base/sampler.h"
#include "sample/threads.h"
#include "base/tid.h"
#include "sample/wall.h"
#include "sample/cpuclock.h"
#include "init.h"
#include "base/libc_next.h"
#include "native/interp_text.h"
#include "sample/threadnames.h"
#include "native/native.h"
#include "sample/heap.h"
#include "signal/sig_waits.h"
#include "forkpause.h"
#include "signal/sig_handler.h"
#include "signal/sig_heap.h"

#define RING_BYTES (1u << 20)

static struct config cfg;
static struct agent_info info;

static int active;
static pid_t active_pid;		 /* the process the agent belongs to */
static volatile sig_atomic_t exec_tried; /* init_note_exec_sigsafe */
/* loaded by `pyprof attach` into a running interpreter (dlopen), not
 * preloaded: started by init_start_late, never by the constructor */
static int late;

static void read_args(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap) {
			if (cap >= (1u << 20))
				break;
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	info.args = buf;
	info.args_len = len;
}

static void read_identity(const char *pyver)
{
	info.start_unix_ns = unix_ns();
	info.start_mono_ns = mono_ns();
	ssize_t n = readlink("/proc/self/exe", info.exe, sizeof info.exe - 1);
	info.exe[n > 0 ? n : 0] = 0;
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, info.comm, sizeof info.comm - 1);
		info.comm[n > 0 ? n : 0] = 0;
		char *nl = strchr(info.comm, '\n');
		if (nl)
			*nl = 0;
		close(fd);
	}
	size_t i = 0;
	while (pyver[i] && pyver[i] != ' ' && i < sizeof info.pyversion - 1) {
		info.pyversion[i] = pyver[i];
		i++;
	}
	info.pyversion[i] = 0;
	read_args();
}

static void fork_prepare(void)
{
	if (active) {
		heap_enter(); /* left in fork_parent or fork_child */
		native_fork_prepare();
		threadnames_fork_prepare();
		agent_fork_prepare();
	}
}

static void fork_parent(void)
{
	if (active) {
		agent_fork_parent();
		native_fork_done();
		heap_leave();
	}
}

/* The code object death hook: PyCode_Type.tp_dealloc, chained. The slot
 * sits at the same offset in every CPython 2.7-3.14 (after ob_refcnt,
 * ob_type, ob_size, tp_name, tp_basicsize, tp_itemsize). */
#define TP_DEALLOC_OFFSET 48
static void (*code_dealloc_orig)(void *);

static void code_dealloc_hook(void *code)
{
	heap_enter(); /* naming may allocate: ours, not the program's */
	agent_code_dying(code);
	heap_leave();
	code_dealloc_orig(code);
}

static void hook_code_dealloc(void *code_type)
{
	void (**slot)(void *) =
		(void (**)(void *))((char *)code_type + TP_DEALLOC_OFFSET);
	if (!*slot)
		return;
	code_dealloc_orig = *slot;
	*slot = code_dealloc_hook;
}

/* The child is a new process with one thread: its timers were not
 * inherited, its perf counters and ring are the parent's. Reset all that
 * and start a new agent (unless PYPROF_CHILDREN=0), which profiles the
 * child as a process of its own. A child that execs at once (subprocess)
 * is profiled by the library loaded into the new program instead. */
static void fork_child(void)
{
	if (!active)
		return;
	/* heap_busy was raised in fork_prepare, and stays so until the end */
	heap_after_fork_child(cfg.children);
	waits_after_fork_child();
	__atomic_store_n(&sampler.active, 0, __ATOMIC_RELEASE);
	/* the parent's own state carries over, its collector's requests
	 * do not (control.h) */
	int cpu_follow = cfg.children && control_after_fork_child();
	/* the ring and the counters are the parent's */
	ring_reset(&sampler.ring);
	sampler.n_samples = sampler.n_lost_ring = sampler.n_signals = 0;
	sampler.n_cut = 0;
	sampler.n_handler_runs = sampler.n_handler_ns = 0;
	sampler.n_periods = 0;
	memset(sampler.hist, 0, sizeof sampler.hist);
	sig_handler_after_fork_child();
	native_fork_done();
	wall_after_fork_child();
	cpuclock_after_fork_child();
	threadnames_after_fork_child();
	tid_note_main(); /* the forking thread is the child's main thread */
	exec_tried = 0;	 /* the parent's attempt is not the child's */
	threads_after_fork_child(cpu_follow);
	info.start_unix_ns = unix_ns();
	info.start_mono_ns = mono_ns();
	active_pid = getpid();
	sampler.owner_pid = (int)active_pid;
	if (cpu_follow)
		__atomic_store_n(&sampler.active, 1, __ATOMIC_RELEASE);
	agent_after_fork_child(cfg.children);
	if (!cfg.children)
		active = 0;
	heap_leave();
}

static const char *env_get(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

/* Where the settings come from: the environment, or (a library loaded
 * by `pyprof attach`) the text the attach script passed (attach.c). */
static const char *(*settings_get)(const char *, void *) = env_get;
static void *settings_arg;

int config_load(struct config *c)
{
	char err[256];
	if (config_check(c, settings_get, settings_arg, err, sizeof err) == 0)
		return 0;
	plog_always("%s; profiling is off", err);
	return -EINVAL;
}

/* stop_all: the end of profiling in this process: waits and heap
 * sampling off, the agent's last frames sent (with the allocator hooks
 * passing through while it sends), the agent stopped. */
static void stop_all(void)
{
	waits_stop();
	heap_stop();
	heap_enter();
	if (exec_tried)
		agent_quiet_if_empty();
	agent_stop();
	heap_leave();
}

/* os._exit() and multiprocessing's children end with _exit(), which runs
 * no destructor (interpose/exec.c calls this first): flush, as at a normal
 * exit. Only in the process that owns the agent: a vfork child shares our
 * memory and must not touch it (its pid differs). */
void init_flush_before_exit(void)
{
	if (active && getpid() == active_pid) {
		active = 0;
		stop_all();
	}
}

void init_note_exec_sigsafe(void)
{
	exec_tried = 1;
}

/* PYPROF_CHILDREN=0: programs this process execs must not load us. Takes
 * our entry (any path ending in libpyprof.so) out of LD_PRELOAD, keeping
 * the others. Constructor only (single-threaded: setenv is safe). */
static void drop_from_preload(void)
{
	const char *v = getenv("LD_PRELOAD");
	if (!v)
		return;
	char out[4096];
	size_t n = 0;
	const char *p = v;
	while (*p) {
		size_t len = strcspn(p, " :");
		size_t base = len;
		while (base > 0 && p[base - 1] != '/')
			base--;
		int ours = len - base == strlen("libpyprof.so") &&
			   !strncmp(p + base, "libpyprof.so", len - base);
		if (!ours && len && n + len + 2 < sizeof out) {
			if (n)
				out[n++] = ' ';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
		while (*p == ' ' || *p == ':')
			p++;
	}
	out[n] = 0;
	if (n)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
}

/*
 * Staying inert for a reason the user must see: one line on stderr (as
 * always), and the refusal HELLO so that the collector counts the process
 * (refuse.h). why has no "profiling is off": the log line adds it.
 */
static void refuse(const char *version, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void refuse(const char *version, const char *fmt, ...)
{
	char why[200], pyver[32] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	plog_always("%s; profiling is off", why);
	if (version) { /* "3.16.0a1 (main, ...)": its first word */
		size_t n = strcspn(version, " ");
		if (n >= sizeof pyver)
			n = sizeof pyver - 1;
		memcpy(pyver, version, n);
		pyver[n] = '\0';
	}
	int rc = refuse_notify(cfg.socket, cfg.collector_uid, pyver, why);
	if (rc < 0)
		plog_debug("no collector told of the refusal: %s",
			   strerror(-rc));
}

/* Parses "3.11.7 (main, ...)" into major and minor. */
static int parse_version(const char *v, int *major, int *minor)
{
	char *end;
	long ma = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -EINVAL;
	long mi = strtol(end + 1, &end, 10);
	if (ma < 2 || ma > 9 || mi < 0 || mi > 99)
		return -EINVAL;
	*major = (int)ma;
	*minor = (int)mi;
	return 0;
}

/*
 * PYPROF_TEST_WITHHOLD_TABLE, for the tests (not a user option), as if
 * this pyprof were built before the running version:
 *   "row"     its compiled row is withheld: 3.13+ profiles from the
 *             interpreter's own _Py_DebugOffsets, the other facts taken
 *             from another 3.13+ row (a new minor whose block kept its
 *             shape);
 *   "layout"  its row and its _Py_DebugOffsets layout are withheld (a
 *             new minor whose block changed shape: refused unless an
 *             older layout fits);
 *   "skew"    its compiled row is kept but its co_qualname made wrong
 *             (a build patched after the table was made): the
 *             mismatch is logged and the interpreter's offsets win;
 *   anything else ("1"): nothing is known of it, no fallback: refused.
 * "row", "layout" and "skew" concern 3.13+ only (an older interpreter has
 * no block to fall back on) and leave older ones as they are, so that a
 * whole test file can run with them set.
 * *row and *layout are the withheld minor or -1; returns 1 for "1".
 */
static int test_withheld(int major, int minor, int *row, int *layout, int *skew)
{
	const char *v = getenv("PYPROF_TEST_WITHHOLD_TABLE");
	int has_block = pyabi_has_debug_offsets(major, minor);

	*row = *layout = -1;
	*skew = 0;
	if (!v || !*v)
		return 0;
	if (!has_block && (strcmp(v, "row") == 0 || strcmp(v, "layout") == 0 ||
			   strcmp(v, "skew") == 0))
		return 0;
	if (strcmp(v, "skew") == 0) {
		*skew = 1;
		return 0;
	}
	if (strcmp(v, "row") == 0) {
		*row = minor;
		return 0;
	}
	if (strcmp(v, "layout") == 0) {
		*row = *layout = minor;
		return 0;
	}
	return 1;
}

/* 3.13+: the row built from _Py_DebugOffsets. Written once here, before
 * any timer is armed; read-only afterwards (pyabi.h). */
static struct pyabi_derived derived;

/*
 * The layout for the running interpreter, or NULL when it is refused (the
 * refusal is made here, with its reason). Up to 3.12: the compiled row.
 * 3.13+: the row built from the process's own _Py_DebugOffsets, which
 * wins over the compiled row when they differ (logged), and stands in
 * for a missing one (a minor released after this build).
 */
static const struct pyabi *choose_abi(const char *version, int major, int minor,
				      void *code_type)
{
	static struct pyabi skewed;
	int withheld, withheld_layout, skew;
	int all = test_withheld(major, minor, &withheld, &withheld_layout,
				&skew);
	const struct pyabi *abi = all || withheld == minor ? NULL
							   : pyabi_find(major, minor);
	void *runtime;
	char why[200] = "", diff[200] = "";
	int rc;

	if (all || !pyabi_has_debug_offsets(major, minor)) {
		if (!abi)
			refuse(version, "Python %d.%d is not supported by this "
					"pyprof",
			       major, minor);
		return abi;
	}
	if (skew && abi) {
		skewed = *abi;
		skewed.co_qualname = abi->co_filename;
		abi = &skewed;
	}
	runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	if (!runtime) {
		if (abi)
			refuse(version, "Python %d.%d does not match pyprof's "
					"layout table (no _PyRuntime)",
			       major, minor);
		else
			refuse(version, "Python %d.%d is not supported by this "
					"pyprof",
			       major, minor);
		return NULL;
	}
	rc = pyabi_from_debug_offsets(major, minor, withheld, withheld_layout,
				      runtime, code_type, guard_copy, &derived,
				      why, sizeof why);
	if (rc < 0) {
		if (abi)
			refuse(version, "Python %d.%d does not match pyprof's "
					"layout table (%s)",
			       major, minor, why);
		else
			refuse(version, "Python %d.%d is not supported by this "
					"pyprof (%s)",
			       major, minor, why);
		return NULL;
	}
	if (!abi)
		plog_info("Python %d.%d: no compiled layout; offsets from its "
			  "_Py_DebugOffsets (read as %d.%d's), other facts from "
			  "the %d.%d row",
			  major, minor, major, derived.layout_minor, major,
			  derived.facts_minor);
	else if (pyabi_compare(abi, &derived.abi, diff, sizeof diff) < 0)
		/* a warning, not a line on the program's stderr: profiling
		 * goes on, correctly */
		plog_warn("Python %d.%d: %s; using the interpreter's own "
			  "offsets",
			  major, minor, diff);
	else
		plog_debug("Python %d.%d: the compiled row agrees with "
			   "_Py_DebugOffsets",
			   major, minor);
	return &derived.abi;
}

/* libpython's entry points the constructor needs, from the global scope. */
struct cpython {
	const char *(*get_version)(void);
	void *(*interp_head)(void);
	int (*is_init)(void);
	void *code_type; /* &PyCode_Type */
};

/* Step 1: is this CPython? 0 with *py filled, or -1. */
static int find_cpython(struct cpython *py)
{
	py->get_version = (const char *(*)(void))dlsym(RTLD_DEFAULT,
						       "Py_GetVersion");
	py->interp_head = (void *(*)(void))dlsym(RTLD_DEFAULT,
						 "PyInterpreterState_Head");
	py->is_init = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	py->code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	return py->get_version && py->interp_head && py->is_init &&
			       py->code_type
		       ? 0
		       : -1;
}

/* Step 2: cfg from the environment, and what it says at once (log level,
 * children, PYPROF_DISABLE). 0 when profiling goes on, else -1. */
static int load_settings(void)
{
	if (config_load(&cfg) < 0)
		return -1;
	plog_level = cfg.log_level;
	if (!cfg.children && !late) /* setenv: single-threaded only */
		drop_from_preload();
	if (cfg.disabled) {
		plog_info("PYPROF_DISABLE is set: profiling is off");
		return -1;
	}
	return 0;
}

/*
 * Builds whose objects pyprof cannot read, each known by either of two
 * symbols: free-threaded builds (3.13t+) have another object header and
 * per-thread bytecode (not supported yet); debug builds (Py_REF_DEBUG) lay
 * objects out differently. Refuses and returns -1 for one, else 0.
 */
static int refuse_build(const char *version, int major, int minor)
{
	static const struct {
		const char *sym[2];
		const char *what;
	} builds[] = {
		{ { "_Py_MergeZeroLocalRefcount", "_Py_ExplicitMergeRefcount" },
		  "a free-threaded build, which pyprof does not support yet" },
		{ { "_Py_NegativeRefcount", "_Py_RefTotal" },
		  "a debug build, which pyprof does not support" },
	};

	for (size_t i = 0; i < sizeof builds / sizeof builds[0]; i++) {
		if (!dlsym(RTLD_DEFAULT, builds[i].sym[0]) &&
		    !dlsym(RTLD_DEFAULT, builds[i].sym[1]))
			continue;
		refuse(version, "Python %d.%d is %s", major, minor,
		       builds[i].what);
		return -1;
	}
	return 0;
}

/* The sampler's settings, and its ring. 0, or -1 after saying why. */
static int sampler_setup(const struct pyabi *abi, const struct cpython *py)
{
	int rc;

	sampler.abi = abi;
	sampler.max_depth = cfg.max_depth;
	sampler.period_ns = 1000000000ull / (uint64_t)cfg.hz;
	sampler.interp_head = py->interp_head;
	sampler.is_initialized = py->is_init;
	sampler.code_type = (uintptr_t)py->code_type;
	sampler.str_type = (uintptr_t)dlsym(
		RTLD_DEFAULT,
		abi->str_kind == PYABI_STR_BYTES ? "PyString_Type"
						 : "PyUnicode_Type");
	sampler.opcodes = cfg.opcodes;
	asyncio_init(cfg.asyncio);
	sampler.runtime = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime");
	sampler.cur_tstate_sym =
		(uintptr_t)dlsym(RTLD_DEFAULT, "_PyThreadState_Current");
	if ((rc = ring_init(&sampler.ring, RING_BYTES)) < 0) {
		plog_error("cannot map the sample ring: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/* The interpreter's code located, then PYPROF_NATIVE: libunwind is
 * loaded only now, only when asked; it needs interp_text_init. */
static void native_setup(const struct cpython *py, const struct pyabi *abi)
{
	if (interp_text_init((const void *)py->is_init) < 0)
		plog_info("cannot locate the interpreter's code: no native "
			  "label");
	if (cfg.native && cfg.mode != CONFIG_MODE_CPU)
		plog_always("PYPROF_NATIVE works in CPU mode only (a thread "
			    "can unwind only itself); sampling without native "
			    "stacks");
	else if (cfg.native)
		native_init(cfg.native, abi->eval_frame);
}

/*
 * Everything that starts sampling, once the row is chosen: the ring, the
 * fault guard and the SIGPROF handler, thread tracking, native stacks,
 * thread names, control, the fork handlers and the agent; then the code
 * dealloc hook and the heap sampler. Returns with active set, or having
 * said why not.
 */
static void start_profiling(const struct pyabi *abi, const struct cpython *py,
			    const char *version, int major, int minor)
{
	int rc;

	if (sampler_setup(abi, py) < 0)
		return;
	read_identity(version);
	if ((rc = guard_install()) < 0 ||
	    (rc = guard_take_sigprof(sig_prof_handler)) < 0) {
		plog_error("cannot install signal handlers: %s",
			   strerror(-rc));
		return;
	}
	threads_init();
	if (!late) /* late: attach_start noted the script's thread */
		tid_note_main();
	native_setup(py, abi);
	if (threadnames_init(abi) < 0)
		plog_info("thread names unavailable: C API entry points "
			  "missing");
	control_init(&cfg);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	forkpause_init(abi);
	if ((rc = agent_start(&cfg, &info)) < 0) {
		plog_error("cannot start the agent thread: %s", strerror(-rc));
		return;
	}
	active = 1;
	active_pid = getpid();
	sampler.owner_pid = (int)active_pid;
	hook_code_dealloc(py->code_type);
	/* loaded late: heap sampling counts from now; blocks allocated
	 * before reach the hooks' frees as any unsampled block does (not
	 * in the table of sampled addresses: passed on, uncounted) */
	heap_init(cfg.heap_rate, cfg.start, abi->mem_allocators, late);
	if (cfg.waits_ns && !abi->waits_profiled)
		plog_always("PYPROF_WAITS: block and mutex profiles need "
			    "Python 3.8 or later (this is %d.%d); profiling "
			    "without them",
			    major, minor);
	else
		waits_init(abi);
	plog_info("Python %d.%d, %d Hz, socket %s%s", major, minor, cfg.hz,
		  cfg.socket, cfg.start ? "" : ", dormant until asked");
}

/* Steps 2 and 3 and the start, once CPython is found (step 1). */
static void start_found(const struct cpython *py)
{
	const struct pyabi *abi;
	const char *version;
	int major, minor;

	if (load_settings() < 0)
		return;
	version = py->get_version();
	if (!version || parse_version(version, &major, &minor) < 0) {
		refuse(NULL, "cannot tell this Python's version");
		return;
	}
	if (refuse_build(version, major, minor) < 0)
		return;
	abi = choose_abi(version, major, minor, py->code_type);
	if (!abi)
		return; /* refused, with its reason */
	pylife_find(major, minor);
	start_profiling(abi, py, version, major, minor);
}

__attribute__((constructor)) static void pyprof_init(void)
{
	struct cpython py;

	libc_next_init();
	if (find_cpython(&py) < 0) {
		/* PyPy's C-API layer exports its own names; say why we stay
		 * out, once (only if it does not even look like CPython). */
		if (dlsym(RTLD_DEFAULT, "pypy_setup_home") &&
		    config_load(&cfg) == 0 && !cfg.disabled)
			refuse(NULL, "PyPy is not supported by pyprof (it "
				     "profiles CPython)");
		return; /* not CPython: stay inert, silently */
	}
	/* Loaded into a running interpreter (dlopen, not LD_PRELOAD):
	 * nothing until `pyprof attach`'s script calls init_start_late
	 * (through pyprof_attach_start) with its settings. */
	if (py.is_init())
		return;
	start_found(&py);
}

int init_start_late(const char *(*get)(const char *, void *), void *arg)
{
	struct cpython py;

	if (active)
		return active_pid == getpid() ? 1 : -EALREADY;
	if (find_cpython(&py) < 0 || !py.is_init())
		return -ENOENT;
	late = 1;
	settings_get = get;
	settings_arg = arg;
	start_found(&py);
	settings_get = env_get; /* arg is the caller's, gone after */
	settings_arg = NULL;
	return active ? 0 : -EINVAL;
}

__attribute__((destructor)) static void pyprof_fini(void)
{
	if (!active)
		return;
	active = 0;
	stop_all();
}
