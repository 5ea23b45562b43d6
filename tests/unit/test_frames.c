/*
 * test_frames.c - the guarded frame walk every sampler uses
 * (frames_sample_sigsafe, preload/signal/sig_frames.c) and its guard policy:
 * whatever fault guard was armed before the call is armed again after it,
 * whether the walk finished or a read faulted, so that a walk nested in
 * another guarded region (the SIGPROF handler interrupting a heap sample)
 * leaves that region's guard working. Reads of a PROT_NONE page stand in
 * for a freed frame; a zeroed buffer for a thread state with no frames.
 * And the real bottom (section 4): a chain that ends at a generator's
 * frame is cut (SAMPLE_CUT, then SAMPLE_TRUNCATED and sampler.n_cut), one
 * that ends at the thread's first frame is whole, on 2.7, 3.10, 3.11,
 * 3.12 and 3.15 layouts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "base/guard.h"
#include "base/libc_next.h"
#include "pyprof/pyabi.h"
#include "base/sampler.h"
#include "signal/sig_frames.h"

static void *no_interp(void)
{
	return NULL;
}

static union {
	struct raw_sample s;
	char room[sizeof(struct raw_sample) + 8 * sizeof(struct raw_frame)];
} rec;

static uintptr_t bad;	     /* a page that faults on every read */
static uintptr_t empty[512]; /* a thread state with no current frame */

/* Runs a walk of ts inside an outer guarded region; returns what the walk
 * returned. *outer_fault: a read of `bad` after the walk jumped to the
 * outer region (without its guard, the test dies of SIGSEGV). */
static int nested(uintptr_t ts, int *outer_fault)
{
	static sigjmp_buf outer;
	static volatile int rc;
	*outer_fault = 0;
	if (sigsetjmp(outer, 0)) {
		*outer_fault = 1;
		return rc;
	}
	guard_jmp = &outer;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memset(&rec, 0, sizeof rec);
	rc = frames_sample_sigsafe(&rec.s, ts, 0);
	/* the outer region goes on reading: its guard must still catch */
	(void)*(volatile uintptr_t *)bad;
	guard_jmp = NULL;
	return rc;
}

/* Fake interpreter memory for section 4: a thread state (and its
 * _PyCFrame on 3.11-3.12), two frames, two code objects. */
static uintptr_t m_ts[64], m_cframe[16], m_gen[32], m_bottom[32];
static uint8_t m_code[2][512] __attribute__((aligned(16)));

#define AT(buf, off) (*(uintptr_t *)((uint8_t *)(buf) + (off)))

/* A frame of layout a at f running code c (generator-like or not, <= 3.10
 * by co_flags), linked to back; owner its owner (3.11+). */
static void fake_frame(const struct pyabi *a, uintptr_t *f, uint8_t *c,
		       int gen, int owner, uintptr_t *back)
{
	memset(f, 0, 32 * sizeof *f);
	memset(c, 0, 512);
	AT(f, a->f_back) = (uintptr_t)back;
	AT(f, a->f_code) = (uintptr_t)c;
	if (a->frame_kind == PYABI_FRAME_OBJECT) {
		*(int32_t *)((uint8_t *)f + a->f_lasti) = 2;
		*(int32_t *)(c + a->co_flags) = gen ? 0x20 : 0x40;
	} else {
		AT(f, a->f_lasti) = (uintptr_t)(c + a->co_code_adaptive + 4);
		*((uint8_t *)f + a->f_owner) = (uint8_t)owner;
		AT(c, a->ob_type) = sampler.code_type;
	}
}

/* Walks a chain ending at a frame that is a generator's (or not) from
 * another thread (ts given); 1 if the walk says it was cut. */
static int cut_at(int minor, int bottom_is_gen, int *n_frames)
{
	const struct pyabi *a = pyabi_find(minor == 27 ? 2 : 3,
					   minor == 27 ? 7 : minor);
	if (!a)
		return -1;
	sampler.abi = a;
	sampler.code_type = (uintptr_t)m_code; /* any: the fakes say it */
	memset(m_ts, 0, sizeof m_ts);
	uintptr_t *top = m_gen;
	if (a->owner_cstack != PYABI_NONE) {
		/* 3.12+: gen -> (a generator, or the entry shim) */
		fake_frame(a, m_bottom, m_code[1], 0,
			   bottom_is_gen ? a->owner_generator : a->owner_cstack,
			   NULL);
		fake_frame(a, m_gen, m_code[0], 0, 0, m_bottom);
	} else {
		int gen_owner = a->owner_generator != PYABI_NONE
					? a->owner_generator
					: 0;
		fake_frame(a, m_bottom, m_code[1], bottom_is_gen,
			   bottom_is_gen ? gen_owner : 0, NULL);
		fake_frame(a, m_gen, m_code[0], 0, 0, m_bottom);
	}
	if (a->ts_cframe != PYABI_NONE) {
		AT(m_ts, a->ts_cframe) = (uintptr_t)m_cframe;
		AT(m_cframe, a->cframe_current_frame) = (uintptr_t)top;
	} else {
		AT(m_ts, a->ts_frame) = (uintptr_t)top;
	}
	memset(&rec, 0, sizeof rec);
	guard_jmp = NULL;
	if (frames_sample_sigsafe(&rec.s, (uintptr_t)m_ts, 0) != 0)
		return -1;
	*n_frames = rec.s.n_frames;
	return (rec.s.flags & SAMPLE_CUT) != 0;
}

static void real_bottoms(void)
{
	static const int minors[] = { 27, 10, 11, 12, 15 };
	char what[96];
	for (unsigned i = 0; i < sizeof minors / sizeof minors[0]; i++) {
		int v = minors[i], n = 0;
		unsigned long before = sampler.n_cut;
		int cut = cut_at(v, 1, &n);
		snprintf(what, sizeof what,
			 "4.%u %s: a chain ending at a generator's frame is "
			 "cut, marked and counted",
			 i + 1,
			 v == 27 ? "2.7" : v == 10 ? "3.10"
				   : v == 11	   ? "3.11"
				   : v == 12	   ? "3.12"
						   : "3.15");
		CHECK(cut == 1 && (rec.s.flags & SAMPLE_TRUNCATED) &&
			      sampler.n_cut == before + 1 && n >= 1,
		      what);
		cut = cut_at(v, 0, &n);
		snprintf(what, sizeof what,
			 "4.%u %s: a chain ending at the thread's first frame "
			 "is whole",
			 i + 1,
			 v == 27 ? "2.7" : v == 10 ? "3.10"
				   : v == 11	   ? "3.11"
				   : v == 12	   ? "3.12"
						   : "3.15");
		CHECK(cut == 0 && !(rec.s.flags & SAMPLE_TRUNCATED) && n >= 1,
		      what);
	}
}

int main(void)
{
	libc_next_init();
	CHECK_OR_RETURN(guard_install() == 0, "0.1 guard installed", 1);
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	CHECK_OR_RETURN(p != MAP_FAILED, "0.2 a PROT_NONE page", 1);
	bad = (uintptr_t)p;
	sampler.abi = pyabi_find(3, 11);
	CHECK_OR_RETURN(sampler.abi != NULL, "0.3 the 3.11 layout", 1);
	sampler.max_depth = 8;
	sampler.interp_head = no_interp;
	int outer_fault;

	/* 1. no guard before: none after */
	guard_jmp = NULL;
	memset(&rec, 0, sizeof rec);
	CHECK(frames_sample_sigsafe(&rec.s, bad, 0) == -EFAULT,
	      "1.1 a faulting walk says so");
	CHECK(guard_jmp == NULL, "1.2 after a fault, no guard left armed");
	CHECK(rec.s.n_frames == 0, "1.3 no frames from a faulting walk");
	memset(&rec, 0, sizeof rec);
	CHECK(frames_sample_sigsafe(&rec.s, (uintptr_t)empty, 0) == 0,
	      "1.4 a thread state with no frames walks");
	CHECK(guard_jmp == NULL && rec.s.n_frames == 0 &&
		      rec.s.tstate == (uintptr_t)empty,
	      "1.5 its tstate, no frames, no guard left armed");

	/* 2. nested in a guarded region: that region's guard comes back */
	int rc = nested(bad, &outer_fault);
	CHECK(rc == -EFAULT, "2.1 the nested walk faulted");
	CHECK(outer_fault, "2.2 after a faulting walk, the outer region's "
			   "next fault jumps to the outer region");
	rc = nested((uintptr_t)empty, &outer_fault);
	CHECK(rc == 0 && outer_fault,
	      "2.3 after a walk that finished, too");

	/* 3. the caller's thread state: none in an empty interpreter list */
	guard_jmp = NULL;
	memset(&rec, 0, sizeof rec);
	CHECK(frames_sample_sigsafe(&rec.s, 0, 0) == -ESRCH,
	      "3.1 no thread state for this thread");
	CHECK(rec.s.flags & SAMPLE_NO_TSTATE, "3.2 marked SAMPLE_NO_TSTATE");
	CHECK(guard_jmp == NULL, "3.3 no guard left armed");

	/* 4. the real bottom */
	real_bottoms();
	return check_summary();
}
