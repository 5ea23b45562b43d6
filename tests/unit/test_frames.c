/*
 * test_frames.c - the guarded frame walk every sampler uses
 * (frames_sample_sigsafe, preload/signal/frames.c) and its guard policy:
 * whatever fault guard was armed before the call is armed again after it,
 * whether the walk finished or a read faulted, so that a walk nested in
 * another guarded region (the SIGPROF handler interrupting a heap sample)
 * leaves that region's guard working. Reads of a PROT_NONE page stand in
 * for a freed frame; a zeroed buffer for a thread state with no frames.
 */
#include <errno.h>
#include <setjmp.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "guard.h"
#include "libc_next.h"
#include "pyabi.h"
#include "sampler.h"

static void *no_interp(void)
{
	return NULL;
}

static union {
	struct raw_sample s;
	char room[sizeof(struct raw_sample) + 8 * sizeof(struct raw_frame)];
} rec;

static uintptr_t bad; /* a page that faults on every read */
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
	return check_summary();
}
