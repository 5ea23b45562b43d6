/*
 * signal/sig_frames.c - the guarded walk of a CPython thread's frames.
 *
 * ASYNC-SIGNAL-SAFE: runs in the SIGPROF handler, in the heap hooks
 * (inside the program's allocations) and on the wall sampler thread, all
 * three through frames_sample_sigsafe (at the end of this file), the one
 * guarded region around the walk. No malloc, stdio, locks or lazily
 * initialised thread-locals. Every load from interpreter memory is a plain
 * volatile load made while the fault guard is armed (guard_run_sigsafe in
 * guard.h): a fault jumps back there, and frames_sample_sigsafe drops the
 * sample's frames.
 *
 * Interpreter memory is not trusted: the walk is bounded (max frames kept,
 * and a cap on frames skipped), stops at a self-link, and checks the
 * code object's type where the version lets a frame hold something else.
 *
 * Per-version rules (see pyabi.h for the offsets):
 *   <= 3.10  tstate->frame, PyFrameObject chain by f_back; f_lasti is a
 *            byte offset (<= 3.9) or a code-unit index (3.10); -1 before
 *            the first instruction.
 *   3.11-12  tstate->cframe->current_frame, _PyInterpreterFrame chain by
 *            previous; prev_instr points into the code's inline bytecode.
 *            Incomplete frames (not a generator's, prev_instr before
 *            _co_firsttraceable) have not started: skip them, as CPython's
 *            own tracebacks do. 3.12: owner CSTACK marks a shim frame.
 *   3.13+    tstate->current_frame; f_executable may be any object: keep
 *            only code objects; instr_ptr points into the bytecode.
 *   3.14+    f_executable is a tagged _PyStackRef (code_ref_tag_mask); 3.14
 *            has two entry owners (CSTACK, INTERPRETER), 3.15 only
 *            INTERPRETER (owner_cstack).
 *
 * The real bottom. A walk that runs off the end of its chain (a NULL
 * previous / f_back) must have reached the thread's first frame; a
 * generator's or coroutine's frame is linked to its caller only while it
 * runs (CPython clears the link when it yields or returns), so a walk made
 * from another thread (wall.c, cpuclock.c) while the program thread runs
 * can read the link after it was cleared and stop there, losing every
 * caller. Per version, the last frame of a whole chain is the real bottom
 * when it is:
 *   <= 3.10  not a generator's (its code's co_flags has none of
 *            CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE,
 *            CO_ASYNC_GENERATOR): the thread's first frame;
 *   3.11     not owned by a generator (there is no shim frame yet);
 *   3.12+    an entry shim (owner_cstack or owner_skip2), which every
 *            call of the eval loop pushes first, the thread's first one
 *            included.
 * Any other end is a cut (SAMPLE_CUT): frames_sample_sigsafe walks again,
 * a few times, when the walk was another thread's, and a stack still cut
 * is marked SAMPLE_TRUNCATED ("[truncated]" in the profile), never passed
 * off as whole.
 *
 * With native stacks on (sampler.native), the walk also marks where each
 * call of the eval loop starts (RAW_ENTRY in sampler.h): every frame on
 * <= 3.10; 3.11 is_entry (carried to the next frame kept when the entry
 * frame itself is skipped as incomplete); 3.12+ the frame kept just before
 * a shim. Without it the walk reads nothing more than before.
 */
#include <errno.h>
#include <pthread.h>

#ifdef PYPROF_REMOTE_WALK
/*
 * The second build of this file, into pyprof (the Makefile's
 * preload_sig_frames.o; pyprof/walk.h): the same walk over another
 * process's memory. Each load is walk_remote_load's (a page cache over
 * process_vm_readv), a load that fails jumps back to walk_remote_guard
 * as a fault jumps back to guard_run_sigsafe here, and every name this
 * file defines gets another one, so that the two builds never meet in
 * one link (the unit tests link both).
 */
#include <stdlib.h>
#include <string.h>

#include "pyprof/walk.h"
#define RD_PTR(a) ((uintptr_t)walk_remote_load((uintptr_t)(a), 8))
#define RD_I32(a) ((int32_t)(uint32_t)walk_remote_load((uintptr_t)(a), 4))
#define RD_U8(a) ((uint8_t)walk_remote_load((uintptr_t)(a), 1))
#define RD_I64(a) ((int64_t)walk_remote_load((uintptr_t)(a), 8))
/* a walk tried again must read the target again, not the cache */
#define WALK_AFRESH() walk_remote_afresh()
#define guard_run_sigsafe walk_remote_guard
#define sampler frames_remote_sampler
#define frames_first_sigsafe frames_first_remote_
#define frames_one_sigsafe frames_one_remote_
#define frames_walk_sigsafe frames_walk_remote_
#define frames_opcode_sigsafe frames_opcode_remote_
#define frames_find_tstate_sigsafe frames_find_tstate_remote_
#define frames_ts_rank_sigsafe frames_ts_rank_remote_
#define frames_sample_sigsafe frames_sample_remote_
#else
#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_I32(a) (*(volatile int32_t *)(uintptr_t)(a))
#define RD_U8(a) (*(volatile uint8_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))
#define WALK_AFRESH() ((void)0)
#endif

#include "base/guard.h"
#include "base/sampler.h"
#include "sig_frames.h"

/* Most frames a walk may skip (shims, incomplete frames) before it gives
 * up on a chain that seems to go on forever. */
#define SKIP_LIMIT 4096
#define MAX_INTERPS 64
#define MAX_THREADS_WALKED 100000

/* Walks of another thread's stack that a cut may trigger (the first
 * included): the race is a window of a few instructions, so a second walk
 * almost always reads the chain whole. */
#define CUT_TRIES 4

/* Generator and coroutine code (co_flags, <= 3.10): CO_GENERATOR,
 * CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR (2.7 has only
 * the first; it gives the others no meaning). */
#define CO_GENERATOR_LIKE 0x3a0

static __thread uintptr_t cached_ts;

/* 1 if frame, whose previous / f_back was NULL, is its thread's first
 * frame (the header's "real bottom"); owner its owner (3.11+), code its
 * code object (<= 3.10). */
static int real_bottom(const struct pyabi *a, int owner, uintptr_t code)
{
	if (a->owner_cstack != PYABI_NONE) /* 3.12+ */
		return owner == a->owner_cstack || owner == a->owner_skip2;
	if (a->f_owner != PYABI_NONE) /* 3.11 */
		return owner != a->owner_generator;
	if (a->co_flags == PYABI_NONE || !code)
		return 1;
	return !(RD_I32(code + a->co_flags) & CO_GENERATOR_LIKE);
}

static uintptr_t first_frame(const struct pyabi *a, uintptr_t ts)
{
	if (a->ts_cframe != PYABI_NONE) {
		uintptr_t cf = RD_PTR(ts + a->ts_cframe);
		return cf ? RD_PTR(cf + a->cframe_current_frame) : 0;
	}
	return RD_PTR(ts + a->ts_frame);
}

uintptr_t frames_first_sigsafe(uintptr_t ts)
{
	return first_frame(sampler.abi, ts);
}

static void fingerprint(const struct pyabi *a, uintptr_t code,
			struct raw_frame *f)
{
	uintptr_t name = RD_PTR(code + (a->co_qualname != PYABI_NONE
						? a->co_qualname
						: a->co_name));
	uintptr_t file = RD_PTR(code + a->co_filename);
	uint32_t line = (uint32_t)RD_I32(code + a->co_firstlineno);
	f->fp = sampler_fp(name, file, line);
}

/* One 3.11+ interpreter frame: its code object and instruction offset
 * into *code and *off, its owner into *owner; RAW_ENTRY into *entry when
 * it starts an eval loop's group (3.11). Returns 0 to record it, 1 to
 * skip it (an entry shim, an incomplete frame, a frame not yet started),
 * marking the entry shim's group end on the frame recorded before it. */
static int read_iframe(const struct pyabi *a, uintptr_t frame, int groups,
		       struct raw_frame *out, int n, int is_entry,
		       int *owner, uintptr_t *code, int64_t *off,
		       uint64_t *entry)
{
	*owner = a->f_owner != PYABI_NONE ? RD_U8(frame + a->f_owner) : -1;
	if (*owner >= 0 &&
	    (*owner == a->owner_cstack || *owner == a->owner_skip2)) {
		/* 3.12+: the eval loop's entry shim */
		if (groups && n > 0)
			out[n - 1].code |= RAW_ENTRY;
		return 1;
	}
	if (is_entry != PYABI_NONE && RD_U8(frame + is_entry))
		*entry = RAW_ENTRY; /* 3.11 */
	*code = RD_PTR(frame + a->f_code) & ~(uintptr_t)a->code_ref_tag_mask;
	if (!*code)
		return 1;
	if (a->lasti_kind == PYABI_LASTI_NEXT &&
	    RD_PTR(*code + a->ob_type) != sampler.code_type)
		return 1;
	uintptr_t start = *code + (uintptr_t)a->co_code_adaptive;
	*off = (int64_t)(RD_PTR(frame + a->f_lasti) - start);
	return a->co_firsttraceable != PYABI_NONE &&
	       *owner != a->owner_generator &&
	       *off < 2 * (int64_t)RD_I32(*code + a->co_firsttraceable);
}

int frames_walk_sigsafe(uintptr_t ts, struct raw_frame *out, int max,
			uint16_t *flags)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t frame = first_frame(a, ts);
	uintptr_t prev_code = 0;
	uint32_t prev_fp = 0;
	int n = 0, skipped = 0;
	/* native stacks on: mark eval-loop entries (RAW_ENTRY) */
	const int groups = sampler.native != 0;
	const uint64_t every = groups && a->frame_kind == PYABI_FRAME_OBJECT
				       ? RAW_ENTRY
				       : 0;
	const int is_entry = groups ? a->f_is_entry : PYABI_NONE;
	int last_owner = -1; /* of the last frame read (real_bottom) */
	uintptr_t last_code = 0;

	while (frame) {
		uintptr_t code = 0, next;
		int64_t off = 0;
		uint64_t entry = every;

		if (n >= max) {
			*flags |= SAMPLE_TRUNCATED;
			break;
		}
		next = RD_PTR(frame + a->f_back);
		if (a->frame_kind == PYABI_FRAME_OBJECT) {
			code = RD_PTR(frame + a->f_code);
			off = RD_I32(frame + a->f_lasti);
			if (a->lasti_kind == PYABI_LASTI_UNITS)
				off *= 2;
		} else if (read_iframe(a, frame, groups, out, n, is_entry,
				       &last_owner, &code, &off, &entry)) {
			goto skip;
		}
		if (!code) {
			*flags |= SAMPLE_INVALID;
			break;
		}
		last_code = code;
		if (off < 0)
			off = RAW_NOT_STARTED; /* <= 3.10: f_lasti -1 */
		else if (off > 0x7fffffff) {
			*flags |= SAMPLE_INVALID;
			break;
		}
		out[n].code = code | entry;
		out[n].offset = (uint32_t)off;
		if (code == prev_code) {
			out[n].fp = prev_fp; /* recursion: same object */
		} else {
			fingerprint(a, code, &out[n]);
			prev_code = code;
			prev_fp = out[n].fp;
		}
		n++;
		if (next == frame) {
			*flags |= SAMPLE_INVALID;
			break;
		}
		frame = next;
		continue;
	skip:
		/* 3.11: an incomplete entry frame still ends its group */
		if (entry && n > 0)
			out[n - 1].code |= RAW_ENTRY;
		if (++skipped > SKIP_LIMIT || next == frame) {
			*flags |= SAMPLE_INVALID;
			break;
		}
		frame = next;
	}
	/* the outermost frame of a whole walk starts the outermost call */
	if (groups && n > 0 && !frame)
		out[n - 1].code |= RAW_ENTRY;
	/* ran off the chain's end: was it the thread's first frame? */
	if (n > 0 && !frame && !real_bottom(a, last_owner, last_code))
		*flags |= SAMPLE_CUT;
	return n;
}

int frames_one_sigsafe(uintptr_t frame, struct raw_frame *f)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t code;
	int64_t off;
	if (a->frame_kind == PYABI_FRAME_OBJECT) {
		code = RD_PTR(frame + a->f_code);
		off = RD_I32(frame + a->f_lasti);
		if (a->lasti_kind == PYABI_LASTI_UNITS)
			off *= 2;
	} else {
		code = RD_PTR(frame + a->f_code) &
		       ~(uintptr_t)a->code_ref_tag_mask;
		if (!code || (sampler.code_type &&
			      RD_PTR(code + a->ob_type) != sampler.code_type))
			return -1;
		off = (int64_t)(RD_PTR(frame + a->f_lasti) -
				(code + (uintptr_t)a->co_code_adaptive));
	}
	if (!code || off > 0x7fffffff)
		return -1;
	f->code = code;
	f->offset = off < 0 ? RAW_NOT_STARTED : (uint32_t)off;
	fingerprint(a, code, f);
	return 0;
}

uint32_t frames_opcode_sigsafe(const struct raw_frame *f)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t bytecode;
	uintptr_t code = raw_code(f);
	if (f->offset == RAW_NOT_STARTED)
		return 0;
	if (a->co_code != PYABI_NONE) { /* <= 3.10: a bytes object */
		uintptr_t b = RD_PTR(code + a->co_code);
		if (!b || (int64_t)f->offset >= RD_I64(b + a->var_size))
			return 0;
		bytecode = b + a->bytes_sval;
	} else {
		bytecode = code + a->co_code_adaptive;
	}
	return 1u + RD_U8(bytecode + f->offset);
}

/* 1 if ts holds the GIL of interp, its interpreter (pyabi_gil_holder's
 * rules, read here without a callback: the guard is armed). */
static int holds_gil(const struct pyabi *a, uintptr_t ts, uintptr_t interp)
{
	switch (a->gil_kind) {
	case PYABI_GIL_CURRENT_SYM:
		return sampler.cur_tstate_sym &&
		       RD_PTR(sampler.cur_tstate_sym) == ts;
	case PYABI_GIL_RUNTIME:
		return sampler.runtime && a->rt_tstate_current >= 0 &&
		       RD_PTR(sampler.runtime + (uintptr_t)a->rt_tstate_current) ==
			       ts;
	case PYABI_GIL_INTERP_PTR: {
		if (!interp || a->interp_gil_ptr < 0 || a->gil_locked < 0 ||
		    a->gil_holder < 0)
			return 0;
		uintptr_t gil = RD_PTR(interp + (uintptr_t)a->interp_gil_ptr);
		return gil && RD_I32(gil + (uintptr_t)a->gil_locked) == 1 &&
		       RD_PTR(gil + (uintptr_t)a->gil_holder) == ts;
	}
	default:
		return 0;
	}
}

int frames_ts_rank_sigsafe(uintptr_t ts, uintptr_t interp)
{
	const struct pyabi *a = sampler.abi;
	if (holds_gil(a, ts, interp))
		return 2;
	uintptr_t f = first_frame(a, ts);
	if (!f)
		return 0;
	if (a->owner_cstack == PYABI_NONE)
		return 1;
	/* 3.12+: a thread state idle in its interpreter has at most its
	 * entry shim (3.15's base frame) */
	int owner = RD_U8(f + a->f_owner);
	return owner != a->owner_cstack && owner != a->owner_skip2;
}

/*
 * The calling thread's thread state. With one interpreter, the first one
 * whose thread id is ours, cached. With subinterpreters a thread has a
 * thread state in each interpreter it entered (3.12+: a
 * concurrent.interpreters call, an InterpreterPoolExecutor worker), all
 * with its thread id; the one it runs is the best by
 * frames_ts_rank_sigsafe, the first (newest interpreter) among equals.
 */
uintptr_t frames_find_tstate_sigsafe(void)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t self = (uintptr_t)pthread_self();
	uintptr_t interp = (uintptr_t)sampler.interp_head();
	int several = interp && RD_PTR(interp + a->interp_next);
	uintptr_t ts = cached_ts, best = 0;
	int best_rank = -1;
	if (!several && ts && RD_PTR(ts + a->ts_thread_id) == self)
		return ts;
	cached_ts = 0;
	int walked = 0;
	for (int i = 0; interp && i < MAX_INTERPS; i++) {
		for (ts = RD_PTR(interp + a->interp_tstate_head);
		     ts && walked < MAX_THREADS_WALKED; walked++) {
			if (RD_PTR(ts + a->ts_thread_id) == self) {
				if (!several) {
					cached_ts = ts;
					return ts;
				}
				int r = frames_ts_rank_sigsafe(ts, interp);
				if (r > best_rank) {
					best = ts;
					best_rank = r;
				}
				if (r == 2)
					return ts;
			}
			uintptr_t nx = RD_PTR(ts + a->ts_next);
			if (nx == ts)
				break;
			ts = nx;
		}
		interp = RD_PTR(interp + a->interp_next);
	}
	return best;
}

/* What one guarded walk reads and writes (frames_sample_sigsafe). */
struct walk {
	struct raw_sample *rec;
	uintptr_t ts;
	int want_opcode;
	int rc;
};

static void walk_guarded(void *arg)
{
	struct walk *w = arg;
	struct raw_sample *rec = w->rec;
	struct raw_frame *out = (struct raw_frame *)(rec + 1);
	uintptr_t t = w->ts ? w->ts : frames_find_tstate_sigsafe();
	if (!t) {
		rec->flags |= SAMPLE_NO_TSTATE;
		w->rc = -ESRCH;
		return;
	}
	uint16_t flags = 0;
	rec->tstate = t;
	/* another thread's stack may be cut by a race (the header): again */
	int tries = w->ts ? CUT_TRIES : 1, n;
	do {
		WALK_AFRESH();
		flags = 0;
		n = frames_walk_sigsafe(t, out, sampler.max_depth, &flags);
	} while ((flags & SAMPLE_CUT) && --tries > 0);
	if (flags & SAMPLE_CUT) {
		flags |= SAMPLE_TRUNCATED;
		__atomic_fetch_add(&sampler.n_cut, 1, __ATOMIC_RELAXED);
	}
	rec->n_frames = (uint16_t)n;
	rec->flags |= flags;
	if (w->want_opcode && n > 0)
		rec->opcode = frames_opcode_sigsafe(out);
}

/*
 * frames_sample_sigsafe - see sampler.h. The one guarded frame walk, a
 * region of guard_run_sigsafe, whose guard policy (save, arm, put back)
 * keeps the nested case right: the SIGPROF handler's walk interrupting a
 * heap sample's, on the same thread, puts the heap sample's guard back.
 * A fault drops the frames walked so far.
 */
int frames_sample_sigsafe(struct raw_sample *rec, uintptr_t ts,
			  int want_opcode)
{
	struct walk w = { rec, ts, want_opcode, 0 };
	if (guard_run_sigsafe(walk_guarded, &w) < 0) {
		rec->n_frames = 0;
		return -EFAULT;
	}
	return w.rc;
}

#ifdef PYPROF_REMOTE_WALK
/* pyprof's build: the walker's state, set for each walk (only what the
 * walk reads: abi, code_type, runtime, cur_tstate_sym, max_depth). */
struct sampler sampler;

int frames_walk_remote(const struct walk_remote_env *env, uint64_t ts,
		       struct raw_frame *out, int max, uint16_t *flags)
{
	struct raw_sample *rec;
	int rc;

	if (!env || !env->abi || !ts || max <= 0)
		return -EINVAL;
	rec = calloc(1, sizeof *rec + (size_t)max * sizeof *out);
	if (!rec)
		return -ENOMEM;
	sampler.abi = env->abi;
	sampler.code_type = (uintptr_t)env->code_type;
	sampler.runtime = (uintptr_t)env->runtime;
	sampler.cur_tstate_sym = (uintptr_t)env->cur_tstate_sym;
	sampler.max_depth = max;
	sampler.native = 0;
	rc = frames_sample_sigsafe(rec, (uintptr_t)ts, 0);
	if (rc == 0) {
		memcpy(out, rec + 1, rec->n_frames * sizeof *out);
		*flags = rec->flags;
		rc = rec->n_frames;
	}
	free(rec);
	return rc;
}
#endif
