/*
 * ticklabel.c - system time where perf is refused; see ticklabel.h.
 */
#include "ticklabel.h"

#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/sampler.h"
#include "pyprof/xorshift.h"

/* The arena of held records (a ring of bytes) and their list, oldest
 * first. A record is held a few of its thread's ticks (up to about 25 ms
 * of its CPU time at 100 Hz): a few records per busy thread. */
#define TL_ARENA (256u << 10)
#define TL_MAX_HELD 1024u

#define TL_EVENTS 32
#define TL_SAMPLES 64
/* Threads followed at once: the busiest (a thread's slot goes to another
 * when it has not run for the longest) */
#define TL_THREADS 64

/* One thread's view of its kernel ticks and of its samples. */
struct tl_thread {
	int tid;	    /* the thread these are of (0: free)             */
	unsigned long seen; /* the tick its clock last moved at          */
	uint64_t cpu_ns;    /* its CPU clock at the last read                */
	uint64_t prof_ns;   /* its PROF (user + system ticks) clock then     */
	uint64_t virt_ns;   /* its VIRT (user ticks) clock then              */
	struct tl_event {
		uint64_t at_ns;	  /* CPU time: the middle of its stretch */
		uint64_t from_ns; /* the stretch: the previous read ...  */
		uint64_t to_ns;	  /* ... and this one                    */
		uint64_t sys_ns;  /* ticks in the kernel, ns             */
		uint64_t all_ns;  /* all ticks, ns                       */
	} ev[TL_EVENTS];
	unsigned n_ev; /* events so far; the newest is ev[(n_ev-1)%N] */
	struct tl_sample {
		uint64_t cpu_ns; /* its CPU time at a sample held        */
		uint64_t code;	 /* the sample's leaf code object        */
	} smp[TL_SAMPLES];
	unsigned n_smp;		/* samples so far; the newest smp[(n_smp-1)%N] */
	double credit;		/* python samples' chance of system time, in
	                   samples, for its next native ones          */
	uint64_t credit_cpu_ns; /* its CPU time when credit last grew */
};

static struct tl_thread threads[TL_THREADS];
static unsigned long n_ticks; /* tl_release's calls: the CPU-clock ticks */

struct held {
	struct tl_thread *t;
	int tid;
	uint64_t cpu_ns; /* the thread's CPU time at the sample */
	uint32_t off, len;
	int done;
};

static _Alignas(8) uint8_t arena[TL_ARENA];
static uint32_t a_head, a_tail; /* bytes in use: from a_head to a_tail */
static struct held held[TL_MAX_HELD];
static unsigned h_first, h_count;

/* A kernel tick's length (the least step seen of a PROF clock, from 1 to
 * 10 ms; 4 ms at 250 Hz) and the sampling period. */
static uint64_t tick_ns = 4000000u;
static uint64_t period_ns;
static unsigned long n_system;
static uint64_t rng = 0xD1B54A32D192ED03ull;

#define TL_TICK_MIN_NS 1000000u
/* Ticks in a row that found a thread's clock still before its held
 * records go with what is known: a thread that waits. Not one: on a busy
 * CPU a thread is often preempted at a read, and the ticks after its
 * sample come later. */
#define TL_STILL_READS 20
/* A function's ticks are taken within this many half windows of a
 * sample (8 ms at 1 kHz): more of its ticks, the less noise, but more
 * of a neighbour's at a boundary (half of one straddling it); a
 * sample waits that long (of its thread's CPU) before it is sent. */
#define TL_WINDOWS 4

/* A thread's own clocks of kind VIRT (1) and PROF (0). */
static clockid_t tid_clock(int tid, unsigned kind)
{
	return (clockid_t)((~(unsigned)tid << 3) | 4 | kind);
}

static uint64_t next_rand(void)
{
	return xorshift_next(&rng);
}

static tl_commit_fn commit_fn;

void tl_reset(uint64_t period, tl_commit_fn commit)
{
	commit_fn = commit;
	memset(threads, 0, sizeof threads);
	n_ticks = 0;
	a_head = a_tail = 0;
	h_first = h_count = 0;
	tick_ns = 4000000u;
	period_ns = period;
	n_system = 0;
}

/* Thread tid's slot, or NULL; with make, a slot made for it (the free
 * one, or the one whose thread moved longest ago). */
static struct tl_thread *slot_of(int tid, int make)
{
	struct tl_thread *old = NULL;
	for (unsigned i = 0; i < TL_THREADS; i++) {
		struct tl_thread *t = &threads[i];
		if (t->tid == tid)
			return t;
		if (!old || !t->tid || (old->tid && t->seen < old->seen))
			old = t;
	}
	if (!make)
		return NULL;
	memset(old, 0, sizeof *old); /* its held records go as they are */
	old->tid = tid;
	return old;
}

void tl_observe(int tid, uint64_t cpu_ns)
{
	struct tl_thread *t = slot_of(tid, 0);
	if (t && cpu_ns <= t->cpu_ns)
		return;
	if (!t) {
		t = slot_of(tid, 1);
		t->cpu_ns = cpu_ns;
		t->seen = n_ticks;
		t->virt_ns = clock_ns(tid_clock(tid, 1));
		t->prof_ns = clock_ns(tid_clock(tid, 0));
		return;
	}
	t->seen = n_ticks;
	/* VIRT first: a tick between the two reads shows in PROF only (as
	 * system time this once) */
	uint64_t virt = clock_ns(tid_clock(tid, 1));
	uint64_t prof = clock_ns(tid_clock(tid, 0));
	if (prof > t->prof_ns) {
		uint64_t all = prof - t->prof_ns;
		uint64_t user = virt > t->virt_ns ? virt - t->virt_ns : 0;
		struct tl_event *e = &t->ev[t->n_ev++ % TL_EVENTS];
		e->at_ns = t->cpu_ns + (cpu_ns - t->cpu_ns) / 2;
		e->from_ns = t->cpu_ns;
		e->to_ns = cpu_ns;
		e->all_ns = all;
		e->sys_ns = all > user ? all - user : 0;
		if (all < tick_ns && all >= TL_TICK_MIN_NS)
			tick_ns = all;
		t->prof_ns = prof;
		t->virt_ns = virt;
	}
	t->cpu_ns = cpu_ns;
}

/* Half the window a sample is labelled by: half a kernel tick or the
 * sampling period, whichever is longer (at 1 kHz, the tick either side
 * of the sample; at 100 Hz, the CPU-clock thread's reads either side). */
static uint64_t half_window(void)
{
	uint64_t h = tick_ns / 2;
	return period_ns > h ? period_ns : h;
}

static uint64_t dist(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The kernel's share of thread t's ticks around CPU time cpu, as the
 * fraction sys / all: those within hw either side, or the nearest event
 * when none is in the window (the kernel's ticks go to whatever runs at
 * them: on a busy CPU a thread may run 10 ms of its time between two).
 * all is 0 if no event is known. */
static void tick_share(const struct tl_thread *t, uint64_t cpu, uint64_t hw,
		       uint64_t *sys_out, uint64_t *all_out)
{
	uint64_t sys = 0, all = 0, best = UINT64_MAX;
	unsigned n = t->n_ev < TL_EVENTS ? t->n_ev : TL_EVENTS;
	const struct tl_event *near = NULL;
	for (unsigned i = 0; i < n; i++) {
		const struct tl_event *e = &t->ev[i];
		uint64_t d = dist(e->at_ns, cpu);
		if (d <= hw) {
			sys += e->sys_ns;
			all += e->all_ns;
		}
		if (d < best) {
			best = d;
			near = e;
		}
	}
	if (!all && near) {
		sys = near->sys_ns;
		all = near->all_ns;
	}
	*sys_out = sys < all ? sys : all;
	*all_out = all;
}

/* The leaf code object of record rec (0 if none). */
static uint64_t leaf_code(const struct raw_sample *rec)
{
	if (!rec->n_frames)
		return 0;
	return ((const struct raw_frame *)(rec + 1))[0].code & ~(uint64_t)1;
}

/* The leaf code of thread t's sample nearest CPU time cpu, or 0. */
static uint64_t code_near(const struct tl_thread *t, uint64_t cpu)
{
	unsigned n = t->n_smp < TL_SAMPLES ? t->n_smp : TL_SAMPLES;
	uint64_t best = UINT64_MAX, code = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t d = dist(t->smp[i].cpu_ns, cpu);
		if (d < best) {
			best = d;
			code = t->smp[i].code;
		}
	}
	return code;
}

/* The kernel's share of thread t's ticks near its samples of function
 * code, within w of CPU time cpu: each tick goes with the samples at the
 * two ends of the stretch it came in (half to each: the tick fell
 * somewhere between them), and counts for code as its samples' leaves
 * are code. A function that lives in the kernel beside one that does not
 * (a sort, then reads) has its own ticks, wherever the boundary between
 * them fell between two ticks. */
static void code_share(const struct tl_thread *t, uint64_t code,
		       uint64_t cpu, uint64_t w, int whole, uint64_t *sys_out,
		       uint64_t *all_out)
{
	uint64_t sys = 0, all = 0;
	unsigned n = t->n_ev < TL_EVENTS ? t->n_ev : TL_EVENTS;
	for (unsigned i = 0; code && i < n; i++) {
		const struct tl_event *e = &t->ev[i];
		if (dist(e->at_ns, cpu) > w)
			continue;
		unsigned halves = (code_near(t, e->from_ns) == code) +
				  (code_near(t, e->to_ns) == code);
		if (whole && halves < 2)
			continue;
		sys += e->sys_ns / 2 * halves;
		all += e->all_ns / 2 * halves;
	}
	*sys_out = sys < all ? sys : all;
	*all_out = all;
}

/*
 * Whether held record h is to be labelled system. The ticks say the
 * kernel's share f of the thread's time around the sample; the sample
 * says where the thread stood. A thread in a system call stands at a
 * calling instruction (its sample is native by its leaf): a sample at
 * any other instruction (python) is the interpreter's, and stays python,
 * so that a function of pure Python beside one that lives in the kernel
 * takes none of its ticks. A python sample's chance f is not lost but
 * passed to the thread's next native samples within the window (the
 * thread's credit, in samples): a loop of Python around short reads has
 * its kernel time where its reads are. Kernel time under Python
 * instructions alone (page faults) is counted as Python here.
 */
static int label_system(const struct held *h, const struct raw_sample *rec)
{
	struct tl_thread *t = h->t;
	uint64_t hw = half_window(), sys, all;
	/* the function's own ticks near it: first those whose stretch has
	 * its samples at both ends (a stretch that straddles the boundary
	 * with a neighbour may hold either's tick), then halves of those too,
	 * then its ticks further away, then any near */
	code_share(t, leaf_code(rec), h->cpu_ns, TL_WINDOWS * hw, 1, &sys,
		   &all);
	if (!all)
		code_share(t, leaf_code(rec), h->cpu_ns, TL_WINDOWS * hw, 0,
			   &sys, &all);
	if (!all)
		code_share(t, leaf_code(rec), h->cpu_ns, UINT64_MAX, 0, &sys,
			   &all);
	if (!all)
		tick_share(t, h->cpu_ns, hw, &sys, &all);
	double f = all ? (double)sys / (double)all : 0.0;
	if (t->credit_cpu_ns + 2 * hw < h->cpu_ns)
		t->credit = 0; /* no native sample came for it */
	if (rec->cpu_kind != SAMPLE_CPU_NATIVE) {
		if (f > 0) {
			t->credit += f;
			t->credit_cpu_ns = h->cpu_ns;
		}
		return 0;
	}
	double p = f + t->credit;
	if (p > 1.0)
		p = 1.0;
	t->credit -= p - f;
	if (t->credit < 0)
		t->credit = 0;
	return (double)(next_rand() >> 11) * (1.0 / 9007199254740992.0) < p;
}

static void release(int all);

int tl_hold(int tid, const struct raw_sample *rec, size_t len,
	    uint64_t cpu_ns)
{
	uint32_t need = (uint32_t)((len + 7) & ~(size_t)7), off;
	struct tl_thread *t = slot_of(tid, 0);
	if (len > TL_ARENA / 4 || !t)
		return -1;
	for (;;) {
		if (h_count == 0) {
			a_head = a_tail = 0;
			off = 0;
			break;
		}
		if (h_count < TL_MAX_HELD) {
			if (a_head <= a_tail && TL_ARENA - a_tail >= need) {
				off = a_tail;
				break;
			}
			if (a_head <= a_tail && a_head > need) {
				off = 0; /* wraps */
				break;
			}
			if (a_tail < a_head && a_head - a_tail > need) {
				off = a_tail;
				break;
			}
		}
		/* full: the oldest goes with what is known of it */
		held[h_first].done = -1;
		release(0);
	}
	memcpy(arena + off, rec, len);
	a_tail = off + need;
	struct held *h = &held[(h_first + h_count++) % TL_MAX_HELD];
	h->t = t;
	h->tid = t->tid;
	h->cpu_ns = cpu_ns;
	h->off = off;
	h->len = (uint32_t)len;
	h->done = 0;
	struct tl_sample *sm = &t->smp[t->n_smp++ % TL_SAMPLES];
	sm->cpu_ns = cpu_ns;
	sm->code = leaf_code(rec);
	return 0;
}

static void release(int all)
{
	uint64_t wait = TL_WINDOWS * half_window() + tick_ns;
	for (unsigned i = 0; i < h_count; i++) {
		struct held *h = &held[(h_first + i) % TL_MAX_HELD];
		if (h->done > 0)
			continue;
		int gone = h->t->tid != h->tid;
		if (!all && !gone && h->done == 0 &&
		    n_ticks - h->t->seen < TL_STILL_READS &&
		    h->t->cpu_ns < h->cpu_ns + wait)
			continue;
		struct raw_sample *rec = (struct raw_sample *)(arena + h->off);
		if (!gone && label_system(h, rec)) {
			rec->cpu_kind = SAMPLE_CPU_SYSTEM;
			n_system++;
		}
		commit_fn(rec);
		h->done = 1;
	}
	while (h_count && held[h_first].done > 0) {
		h_first = (h_first + 1) % TL_MAX_HELD;
		h_count--;
		a_head = h_count ? held[h_first].off : 0;
	}
	if (!h_count)
		a_head = a_tail = 0;
}

void tl_release(int all)
{
	n_ticks++;
	release(all);
}

unsigned long tl_system_count(void)
{
	return n_system;
}
