/*
 * sig_handler.c - the SIGPROF handler: one sample of the interrupted thread.
 *
 * ASYNC-SIGNAL-SAFE: runs on whatever application thread the per-thread
 * timer interrupted. No malloc, stdio, locks or lazily initialised
 * thread-locals (our thread-locals are initial-exec); errno saved and
 * restored. Bounded work: one thread-list walk at most (cached), one frame
 * walk of at most max_depth frames, copied straight into the ring, and with
 * PYPROF_NATIVE one native unwind of at most SAMPLER_NATIVE_MAX frames.
 *
 * Native stacks: first from the interrupted registers over unwind tables
 * the agent built from the loaded objects' .eh_frame (cfi.h,
 * sig_unwind.c), which costs the same for an address seen before or not;
 * where those tables cannot say (CFA expressions, code without unwind
 * information), libunwind's unw_backtrace() does local unwinding from
 * here, through the kernel's signal frame (it recognizes the trampoline,
 * __restore_rt, and takes the registers from the ucontext there), into
 * the interrupted code. It is the one call out of our code that check-
 * sigsafe allows beyond libc's safe set; why it is safe enough:
 *   - it allocates nothing on its fast path: its per-thread cache is
 *     mmap'd, once per thread, and reached through a thread-local of its
 *     own, which native_prepare_thread() touched outside any signal first
 *     (a dlopen'd library's TLS is allocated with malloc on first use);
 *     threads that were not prepared are unwound by our tables only
 *     (sampler_native_ready);
 *   - the locks it takes (its caches) are held with every signal blocked,
 *     so a handler never interrupts their holder on the same thread;
 *   - the stack reads of its fast path are plain loads: run under the fault
 *     guard, a bad frame costs the native half of this sample only.
 * A miss in its cache (an address seen for the first time) parses DWARF
 * unwind tables and looks objects up with dl_iterate_phdr, which takes the
 * loader's (recursive) lock: the cost of echion's, gperftools' and every
 * libunwind-based in-process profiler.
 *
 * sigprocmask: libunwind blocks every signal around each lock it takes
 * and around dl_iterate_phdr, so that no signal handler on the same thread
 * re-enters it: eight system calls per cache miss, most of a miss's cost
 * (measured here: 6.8 us per miss with them, 1.8 us without). While this
 * handler unwinds, its thread needs no such protection from libunwind
 * (SIGPROF is blocked in the handler, in_handler stops re-entry, and
 * nothing else in the process calls our RTLD_LOCAL copy of libunwind), so
 * pyprof interposes sigprocmask() and makes it a no-op on this thread for
 * the duration of unw_backtrace() only (in_unwind); everywhere else, and
 * on every other thread, it is pthread_sigmask(), which is what glibc's
 * sigprocmask() is. The regions libunwind protects this way read only its
 * own memory and the loaded objects' unwind tables, never the stack, so a
 * fault cannot leave one of its locks held behind our guard's longjmp.
 *
 * A SIGPROF that is not from one of our timers (its si_value is not our
 * cookie) belongs to the application and goes to its handler, if any.
 */
#include <errno.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "native/cfi.h"
#include "base/clock.h"
#include "base/guard.h"
#include "native/interp_text.h"
#include "base/sampler.h"
#include "pyprof/pyabi.h"
#include "sig_frames.h"
#include "sig_handler.h"
#include "sig_labels.h"
#include "sig_unwind.h"
#include "pyprof/xorshift.h"

static __thread int in_handler;
static __thread int in_unwind;	      /* inside unw_backtrace: see above */
static __thread int counted_unwind;   /* counted in sampler.in_libunwind */
static __thread sigset_t unwind_mask; /* this thread's mask meanwhile */
static __thread uint32_t my_tid;      /* cached: gettid costs a system call */

void sig_handler_after_fork_child(void)
{
	my_tid = 0;
}

/*
 * The native stack into the record, after its Python frames, leaf first:
 * from our tables, else from unw_backtrace, which starts in this handler,
 * so everything before the interrupted PC (the handler's frames, the
 * signal trampoline) is dropped. The caller has armed the guard.
 */
static void capture_native(struct raw_sample *rec, const ucontext_t *uc)
{
	uint64_t *pcs = (uint64_t *)((struct raw_frame *)(rec + 1) +
				     rec->n_frames);
	const int want = SAMPLER_NATIVE_MAX + SAMPLER_NATIVE_SKIP;
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	int got, i, n;

	/* our own tables first (cfi.h), libunwind where they cannot say;
	 * our tables need nothing of the thread (its cache, if it has none,
	 * is skipped): a thread that was not prepared (one that ran before
	 * an attach loaded the library) is unwound by them too */
	int trunc;
	n = cfi_unwind_sigsafe(uc, pcs, SAMPLER_NATIVE_MAX, &trunc);
	if (n > 0) {
		if (trunc)
			rec->flags |= SAMPLE_NATIVE_TRUNCATED;
		rec->n_native = (uint16_t)n;
		__atomic_fetch_add(&sampler.n_native_tables, 1,
				   __ATOMIC_RELAXED);
		return;
	}
	if (!sampler_native_ready) { /* libunwind's TLS not touched yet */
		rec->flags |= SAMPLE_NATIVE_FAILED;
		return;
	}
	__atomic_fetch_add(&sampler.n_native_libunwind, 1, __ATOMIC_RELAXED);
	/* Not while a fork is being prepared: libunwind takes the loader's
	 * lock and its own, and a child forked meanwhile would inherit them
	 * taken (native_fork_prepare waits for in_libunwind to drain).
	 * seq_cst: the increment must be visible before forking is read,
	 * as the preparing thread stores forking before reading the count. */
	__atomic_fetch_add(&sampler.in_libunwind, 1, __ATOMIC_SEQ_CST);
	counted_unwind = 1;
	if (__atomic_load_n(&sampler.forking, __ATOMIC_SEQ_CST)) {
		__atomic_fetch_sub(&sampler.in_libunwind, 1, __ATOMIC_RELEASE);
		counted_unwind = 0;
		rec->flags |= SAMPLE_NATIVE_FAILED;
		return;
	}
	unwind_mask = uc->uc_sigmask; /* as it was, plus SIGPROF now */
	sigaddset(&unwind_mask, SIGPROF);
	in_unwind = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	got = sampler.unw_backtrace((void **)pcs, want);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	in_unwind = 0;
	__atomic_fetch_sub(&sampler.in_libunwind, 1, __ATOMIC_RELEASE);
	counted_unwind = 0;
	for (i = 0; i < got && i < SAMPLER_NATIVE_SKIP && pcs[i] != pc; i++)
		;
	if (i >= got || pcs[i] != pc) {
		rec->flags |= SAMPLE_NATIVE_FAILED; /* not through the signal */
		return;
	}
	n = got - i;
	if (got == want || n > SAMPLER_NATIVE_MAX) {
		rec->flags |= SAMPLE_NATIVE_TRUNCATED;
		if (n > SAMPLER_NATIVE_MAX)
			n = SAMPLER_NATIVE_MAX;
	}
	for (int k = 0; k < n; k++) /* i >= k: a forward copy is safe */
		pcs[k] = pcs[k + i];
	rec->n_native = (uint16_t)n;
}

/*
 * sigprocmask()'s body (interpose/signals.c): pthread_sigmask() (the same
 * thing in glibc, its internal signals kept unblockable), except inside
 * our own unw_backtrace() call, where it changes nothing and reports the
 * mask the thread has (see the top of this file). Any thread, any context.
 */
int sig_handler_sigprocmask_sigsafe(int how, const sigset_t *set, sigset_t *old)
{
	int rc;
	if (in_unwind) {
		if (old)
			*old = unwind_mask;
		return 0;
	}
	rc = pthread_sigmask(how, set, old);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* Our perf_event counters' fds, one bit each (sig_handler.h). */
static uint8_t perf_fd_bits[PERF_FD_MAX / 8];

int sig_handler_perf_fd_sigsafe(int fd)
{
	return fd >= 0 && fd < PERF_FD_MAX &&
	       (__atomic_load_n(&perf_fd_bits[fd / 8], __ATOMIC_RELAXED) &
		(1u << (fd % 8)));
}

void sig_handler_perf_fd_mark(int fd)
{
	if (fd < 0 || fd >= PERF_FD_MAX)
		return;
	__atomic_fetch_or(&perf_fd_bits[fd / 8], (uint8_t)(1u << (fd % 8)),
			  __ATOMIC_RELEASE);
}

/* Whether this SIGPROF is one of ours: a thread timer's (its si_value is
 * our cookie) or a perf counter's overflow (from_perf set). */
static inline int is_ours(const siginfo_t *si, int *from_perf)
{
	*from_perf = (si->si_code == POLL_HUP || si->si_code == POLL_IN) &&
		     sig_handler_perf_fd_sigsafe(si->si_fd);
	return *from_perf ||
	       (si->si_code == SI_TIMER && si->si_value.sival_ptr == &sampler);
}

/* Perf counters that still run their first, random, period
 * (sig_handler_perf_phase_mark): one bit per fd. */
static uint8_t perf_phase_bits[PERF_FD_MAX / 8];
/* ...of those, the counters of the CPU-clock thread's table; and the
 * ones whose first overflow came, for that thread to set the period */
static uint8_t perf_private_bits[PERF_FD_MAX / 8];
static uint8_t perf_due_bits[PERF_FD_MAX / 8];
static int perf_due_n; /* bits set in it */
unsigned sig_handler_due_word;

void sig_handler_perf_phase_mark(int fd)
{
	if (fd < 0 || fd >= PERF_FD_MAX)
		return;
	__atomic_fetch_or(&perf_phase_bits[fd / 8], (uint8_t)(1u << (fd % 8)),
			  __ATOMIC_RELEASE);
}

/* A counter's first overflow: from now on it overflows every period
 * (its first period was a random part of one, so that a thread that
 * lives less than a period is sampled with the probability of its CPU
 * time: docs/design.md, "Where the CPU time was spent"). One ioctl per
 * counter, once. */
static void perf_first_overflow(int fd)
{
	uint8_t bit = (uint8_t)(1u << (fd % 8));
	uint64_t period = sampler.period_ns;

	if (fd < 0 || fd >= PERF_FD_MAX ||
	    !(__atomic_fetch_and(&perf_phase_bits[fd / 8], (uint8_t)~bit,
				 __ATOMIC_ACQ_REL) &
	      bit))
		return;
	if (__atomic_load_n(&perf_private_bits[fd / 8], __ATOMIC_ACQUIRE) &
	    bit) {
		/* a number of the CPU-clock thread's table: that thread sets
		 * the period; until it does, the overflows that come a
		 * random part of a period apart are thinned by the grid
		 * (perf_on_grid) */
		__atomic_fetch_or(&perf_due_bits[fd / 8], bit,
				  __ATOMIC_RELEASE);
		__atomic_add_fetch(&perf_due_n, 1, __ATOMIC_RELEASE);
		sig_handler_wake_clock();
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
}

void sig_handler_wake_clock(void)
{
	__atomic_add_fetch(&sig_handler_due_word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &sig_handler_due_word, FUTEX_WAKE_PRIVATE, 1, NULL,
		NULL, 0);
}

void sig_handler_perf_private_mark(int fd, int private_)
{
	uint8_t bit = (uint8_t)(1u << (fd % 8));

	if (fd < 0 || fd >= PERF_FD_MAX)
		return;
	if (__atomic_fetch_and(&perf_due_bits[fd / 8], (uint8_t)~bit,
			       __ATOMIC_ACQ_REL) &
	    bit)
		__atomic_sub_fetch(&perf_due_n, 1, __ATOMIC_ACQ_REL);
	if (private_)
		__atomic_fetch_or(&perf_private_bits[fd / 8], bit,
				  __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&perf_private_bits[fd / 8], (uint8_t)~bit,
				   __ATOMIC_RELEASE);
}

int sig_handler_perf_period_due(int *from)
{
	if (!__atomic_load_n(&perf_due_n, __ATOMIC_ACQUIRE)) {
		*from = PERF_FD_MAX;
		return -1;
	}
	for (int i = *from < 0 ? 0 : *from / 8; i < PERF_FD_MAX / 8; i++) {
		if (!__atomic_load_n(&perf_due_bits[i], __ATOMIC_ACQUIRE))
			continue;
		for (int b = 0; b < 8; b++) {
			int fd = i * 8 + b;
			uint8_t bit = (uint8_t)(1u << b);
			if (fd < *from)
				continue;
			if (__atomic_fetch_and(&perf_due_bits[i], (uint8_t)~bit,
					       __ATOMIC_ACQ_REL) &
			    bit) {
				__atomic_sub_fetch(&perf_due_n, 1,
						   __ATOMIC_ACQ_REL);
				*from = fd + 1;
				return fd;
			}
		}
	}
	*from = PERF_FD_MAX;
	return -1;
}

/* This thread's CPU clock (user and system), 0 if unreadable. */
static inline uint64_t own_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * CPU timers (PYPROF_CPU_SOURCE=timer, or native stacks where perf is
 * refused): the kernel's part from its own ticks. A CPU timer expires at
 * a tick, and the same tick charged the thread's user or system time as
 * it found it; the thread's VIRT clock counts its user ticks and its PROF
 * clock all of them (preload/sample/ticklabel.h). The ticks since this
 * thread's last sample say how much of its time since then the kernel
 * had: this sample is system with that share (at most 250 Hz here, a
 * tick or two a sample). Initial-exec TLS, valid while tick_gen is
 * sampler.cpu_gen.
 */
static __thread uint64_t tick_virt_ns, tick_prof_ns, tick_rng;
static __thread unsigned tick_gen;

static int timer_tick_system(void)
{
	struct timespec v, p;
	unsigned gen = __atomic_load_n(&sampler.cpu_gen, __ATOMIC_RELAXED);
	clockid_t own = (clockid_t)((~(unsigned)my_tid << 3) | 4);

	if (!my_tid || clock_gettime(own | 1, &v) != 0 ||
	    clock_gettime(own, &p) != 0)
		return 0;
	uint64_t virt = (uint64_t)v.tv_sec * 1000000000ull + (uint64_t)v.tv_nsec;
	uint64_t prof = (uint64_t)p.tv_sec * 1000000000ull + (uint64_t)p.tv_nsec;
	if (tick_gen != gen || prof < tick_prof_ns) { /* a new run or child */
		tick_gen = gen;
		tick_prof_ns = tick_virt_ns = 0;
		tick_rng = ((uint64_t)my_tid << 32) ^ prof ^ 0x9E3779B97F4A7C15ull;
	}
	uint64_t all = prof - tick_prof_ns;
	uint64_t user = virt > tick_virt_ns ? virt - tick_virt_ns : 0;
	tick_prof_ns = prof;
	tick_virt_ns = virt;
	if (!all || user >= all)
		return 0;
	return (xorshift_next(&tick_rng) >> 11) % all < all - user;
}

/* This thread's grid of CPU time for the perf counters, valid while
 * grid_gen is sampler.cpu_gen: one point a period from its first
 * sample. Initial-exec TLS. */
static __thread uint64_t grid_ns;
static __thread unsigned grid_gen;

/*
 * Whether a counter's overflow stands for a point of this thread's grid
 * (a period of its CPU time since the last one it took). A counter runs
 * its first, random, period; until the period is set (by this handler,
 * or, for a counter of the CPU-clock thread's table, by that thread a
 * little later) it overflows that random part of a period apart: those
 * overflows are taken only as the thread's clock passes its grid, so
 * that the samples stay one a period. Overflows a period apart pass
 * every time (up to half a period early or late).
 */
static int perf_on_grid(uint64_t now)
{
	uint64_t period = sampler.period_ns;
	unsigned gen = __atomic_load_n(&sampler.cpu_gen, __ATOMIC_RELAXED);

	if (!now || !period)
		return 1;
	if (grid_gen != gen || now + period < grid_ns) {
		/* the first sample of this run (or of a fork child, whose
		 * clock started again) */
		grid_gen = gen;
		grid_ns = now;
		return 1;
	}
	if (now + period / 2 < grid_ns + period)
		return 0;
	grid_ns += (now + period / 2 - grid_ns) / period * period;
	return 1;
}

/* This thread's CPU clock at its last perf sample and the system time not
 * yet charged (ns; signed: a sample's skid can make one interval short),
 * valid while their generation is sampler.cpu_gen. Initial-exec TLS. */
static __thread uint64_t sys_mark_ns;
static __thread int64_t sys_due_ns;
static __thread unsigned sys_gen;

/*
 * Perf counters count the thread's time but sample it in user mode only
 * (threads.c: an overflow that lands in the kernel is dropped), so the
 * periods that ended in the kernel have no signal of their own: the
 * thread's CPU clock, which counts user and system time, says how much
 * more than one period passed since this thread's last sample. That time
 * is charged here, to where the thread is now (back in user mode, most
 * often right after the system call that spent it), as system time.
 * Returns the whole periods due (0 most of the time).
 */
static uint32_t perf_system_periods(uint64_t now)
{
	uint64_t period = sampler.period_ns;
	unsigned gen = __atomic_load_n(&sampler.cpu_gen, __ATOMIC_RELAXED);
	uint64_t n;

	if (!now || !period)
		return 0;
	if (sys_gen != gen || now < sys_mark_ns) {
		sys_gen = gen;
		sys_mark_ns = now;
		sys_due_ns = 0;
		return 0;
	}
	sys_due_ns += (int64_t)(now - sys_mark_ns) - (int64_t)period;
	sys_mark_ns = now;
	if (sys_due_ns < -(int64_t)period)
		sys_due_ns = -(int64_t)period;
	if (sys_due_ns < (int64_t)period)
		return 0;
	n = (uint64_t)sys_due_ns / period;
	sys_due_ns -= (int64_t)(n * period);
	return n > 100000 ? 100000 : (uint32_t)n;
}

/* The CPU-clock sampler's system mode (sampler.h, struct sampler_kslot):
 * this thread's slot brought up to this sample. Returns the grid points
 * since its previous sample that ended in the kernel and that the
 * sampler thread did not charge already: this sample charges them. */
static uint32_t perf_mark_kernel(uint64_t now)
{
	uint64_t period = sampler.period_ns, m = 0, ahead;
	unsigned gen = __atomic_load_n(&sampler.cpu_gen, __ATOMIC_RELAXED);
	struct sampler_kslot *k;

	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	if (!now || !period)
		return 0;
	k = &sampler.kslots[my_tid % SAMPLER_TID_SLOTS];
	__atomic_store_n(&k->seq, k->seq + 1, __ATOMIC_RELAXED); /* odd */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (k->tid != (int)my_tid || k->gen != gen || now < k->mark_ns) {
		k->tid = (int)my_tid;
		k->gen = gen;
	} else {
		/* the grid points since the last sample, this one included
		 * (rounded: a sample comes a little after its point) */
		m = (now - k->mark_ns + period / 2) / period;
		m = m > 1 ? m - 1 : 0;
	}
	k->mark_ns = now;
	/* a new generation: the sampler thread's charges past the old mark
	 * come back here, and it starts again from this one */
	ahead = __atomic_load_n(&k->ahead, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(
		&k->ahead, &ahead, ((ahead >> 32) + 1) << 32, 0,
		__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&k->seq, k->seq + 1, __ATOMIC_RELAXED); /* even */
	ahead &= 0xffffffffu;
	m = m > ahead ? m - ahead : 0;
	return m > 100000 ? 100000 : (uint32_t)m;
}

/* How many sampling periods this signal stands for: a timer's overruns
 * count (capped), a perf counter's overflow is one. */
static inline uint32_t sample_weight(const siginfo_t *si, int from_perf)
{
	uint32_t weight = from_perf ? 1
				    : 1 + (uint32_t)(si->si_overrun > 0 ? si->si_overrun
									: 0);
	return weight > 100000 ? 100000 : weight;
}

/* The record's head: time, weight, thread, and where the thread was
 * interrupted: in the interpreter, or in native code (an extension,
 * libc...). */
static inline void record_start(struct raw_sample *rec, uint64_t t0,
				uint32_t weight, const ucontext_t *uc, int kind)
{
	rec->time_ns = t0;
	rec->value_ns = weight * sampler.period_ns;
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	rec->tid = my_tid;
	rec->weight = weight;
	rec->n_frames = 0;
	rec->flags = 0;
	rec->tstate = 0;
	rec->opcode = 0;
	rec->n_native = 0;
	rec->n_labels = 0;
	rec->n_task = 0;
	rec->wait = 0;
	rec->cpu_kind = (uint8_t)kind;
	int in_py = interp_text_contains_sigsafe(
		(uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
	if (in_py >= 0)
		rec->flags |= SAMPLE_NATIVE_KNOWN | (in_py ? 0 : SAMPLE_NATIVE);
}

/* Python or native time (docs/reading.md, "Python, native and system
 * time"): native when the program counter is outside the interpreter, or
 * when the leaf Python frame executes a calling instruction (it is then
 * inside what it called, and the callee is C: a Python callee would be
 * the leaf). Unknown when neither can be told. */
static inline int cpu_kind_of(const struct raw_sample *rec)
{
	if ((rec->flags & (SAMPLE_NATIVE_KNOWN | SAMPLE_NATIVE)) ==
	    (SAMPLE_NATIVE_KNOWN | SAMPLE_NATIVE))
		return SAMPLE_CPU_NATIVE;
	if (rec->opcode && sampler.abi &&
	    pyabi_calls(sampler.abi, rec->opcode - 1))
		return SAMPLE_CPU_NATIVE;
	if (rec->n_frames && (rec->flags & SAMPLE_NATIVE_KNOWN))
		return SAMPLE_CPU_PYTHON;
	return rec->n_frames ? SAMPLE_CPU_PYTHON : SAMPLE_CPU_UNKNOWN;
}

/* The native stack, a guarded region of its own (guard_run_sigsafe): a
 * bad native frame loses the native stack, not the Python one. */
struct native_arg {
	struct raw_sample *rec;
	const ucontext_t *uc;
};

static void capture_native_region(void *arg)
{
	const struct native_arg *na = arg;
	capture_native(na->rec, na->uc);
}

static void capture_native_guarded(struct raw_sample *rec,
				   const ucontext_t *uc)
{
	struct native_arg na = { rec, uc };
	if (guard_run_sigsafe(capture_native_region, &na) == 0)
		return;
	rec->n_native = 0;
	rec->flags |= SAMPLE_NATIVE_FAILED;
	in_unwind = 0;
	if (counted_unwind) { /* faulted inside libunwind */
		__atomic_fetch_sub(&sampler.in_libunwind, 1, __ATOMIC_RELEASE);
		counted_unwind = 0;
	}
}

/* One sample of this thread into the ring: its Python frames, and with
 * PYPROF_NATIVE its native stack; a full ring counts it lost. system: 1
 * the sample stands for time the kernel spent (perf_system_periods), 0
 * it is a perf counter's (python or native by where it stopped), -1 a
 * CPU timer's (system by the kernel's ticks: timer_tick_system). */
static void take_sample(uint64_t t0, uint32_t weight, const ucontext_t *uc,
			int system)
{
	size_t cap = sizeof(struct raw_sample) +
		     (size_t)sampler.max_depth * sizeof(struct raw_frame);
	if (sampler.native)
		cap += (SAMPLER_NATIVE_MAX + SAMPLER_NATIVE_SKIP) *
		       sizeof(uint64_t);
	size_t room = sampler_labels_room_sigsafe();
	cap += room;
	uint64_t pos;
	struct raw_sample *rec = ring_reserve_sigsafe(&sampler.ring, cap, &pos);
	if (!rec) {
		__atomic_fetch_add(&sampler.n_lost_ring, weight,
				   __ATOMIC_RELAXED);
		return;
	}
	record_start(rec, t0, weight, uc,
		     system > 0 ? SAMPLE_CPU_SYSTEM : SAMPLE_CPU_UNKNOWN);
	/* the leaf's opcode always: it tells Python time from a builtin's
	 * (cpu_kind_of); kept in the record only for PYPROF_OPCODES */
	if (frames_sample_sigsafe(rec, 0, 1) == -EFAULT)
		rec->flags |= SAMPLE_FAULT;
	if (system < 0) /* a CPU timer's: by the kernel's ticks */
		system = timer_tick_system();
	rec->cpu_kind = system ? SAMPLE_CPU_SYSTEM
			       : (uint8_t)cpu_kind_of(rec);
	if (!sampler.opcodes)
		rec->opcode = 0;
	if (sampler.native && !(rec->flags & SAMPLE_FAULT))
		capture_native_guarded(rec, uc);
	if (room && !(rec->flags & SAMPLE_FAULT))
		sampler_labels_sigsafe(rec, room);
	ring_commit_sigsafe(&sampler.ring, rec, pos, cap, raw_size(rec));
	__atomic_fetch_add(&sampler.n_samples, 1, __ATOMIC_RELAXED);
}

/* The handler's own cost: its time into the histogram and the sums. */
static inline void count_run(uint64_t t0, uint32_t weight)
{
	uint64_t dt = mono_ns() - t0;
	uint64_t b = dt / SAMPLER_HIST_NS;
	__atomic_fetch_add(&sampler.hist[b < SAMPLER_HIST_N ? b
							    : SAMPLER_HIST_N - 1],
			   1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sampler.n_handler_ns, dt, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sampler.n_handler_runs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sampler.n_periods, weight, __ATOMIC_RELAXED);
}

void sig_prof_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno, from_perf;
	if (!is_ours(si, &from_perf)) {
		errno = saved_errno;
		guard_chain_sigsafe(GUARD_PROF, sig, si, uc);
		return;
	}
	__atomic_fetch_add(&sampler.n_signals, 1, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&sampler.active, __ATOMIC_ACQUIRE) || in_handler)
		goto out;
	in_handler = 1;
	/* A heap sample (sig_heap.c) may be walking this thread's frames under
	 * a guard of its own when we interrupt it: put it back on the way out
	 * (a fault of ours disarms the guard before jumping to us). Our guarded
	 * regions (the frame walk, the native unwind) do the same for
	 * themselves (guard_run_sigsafe's policy); this covers every exit. */
	sigjmp_buf *prev_jmp = guard_jmp;
	uint64_t t0 = mono_ns();
	uint32_t weight = sample_weight(si, from_perf);
	uint32_t sys_periods = 0;
	if (from_perf) {
		perf_first_overflow(si->si_fd);
		/* the thread's clock, read once: the grid and the kernel's
		 * periods both count from it */
		uint64_t now = own_cpu_ns();
		if (!perf_on_grid(now))
			goto out_quiet;
		if (__atomic_load_n(&sampler.sysclock, __ATOMIC_RELAXED))
			sys_periods = perf_mark_kernel(now);
		else
			sys_periods = perf_system_periods(now);
	}
	/* starting up or finalizing: nothing to read */
	if (sampler.is_initialized()) {
		take_sample(t0, weight, uc, from_perf ? 0 : -1);
		if (sys_periods)
			take_sample(t0, sys_periods, uc, 1);
	}
	count_run(t0, weight + sys_periods);
out_quiet:
	guard_jmp = prev_jmp;
	in_handler = 0;
out:
	errno = saved_errno;
}
