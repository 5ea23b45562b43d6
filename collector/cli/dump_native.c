/*
 * dump_native.c - `pyprof dump PID --native`: every thread's native (C)
 * stack, read from outside while the thread is stopped, merged with its
 * Python stack as docs/native.md says.
 *
 * Steps: each thread of the target is stopped with PTRACE_SEIZE and
 * PTRACE_INTERRUPT (a ptrace stop, not a signal: a blocking call it was
 * in is restarted by the kernel when it resumes, the program sees no
 * EINTR and no handler runs); the Python stacks are read by the target's
 * interpreter (cmd_dump.c's reader) while every thread stands still, so
 * both halves are of one moment; each thread is unwound from its
 * registers by libunwind's remote unwinder (libunwind-ptrace, loaded with
 * dlopen from Debian's libunwind8, as the library loads libunwind.so.8);
 * then every thread is detached, a signal it received meanwhile given
 * back. The native frames are named with the collector's ELF reader
 * (elfsym.h: symbol tables, debug files, DWARF lines), as in profiles.
 *
 * The merge: each call of the eval loop (_PyEval_EvalFrameDefault) runs
 * one group of Python frames. Where the reader marks the groups (3.15's
 * "<native>" entries) and their count is that of the eval calls, each
 * call is replaced by its group and the interpreter's frames between two
 * groups are folded away; a count that differs is a merge failure
 * (docs/native.md's shape). 3.14's reader gives the innermost group only
 * (it stops at the first entry frame): it replaces the innermost call,
 * and the outer calls stay native frames under a line that says so.
 *
 * Single-threaded, in the pyprof process.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "common/log.h"
#include "symbols/elfsym.h"

#define DN_MAX_THREADS 4096
#define DN_MAX_FRAMES 512
#define DN_MAX_MAPS 8192
#define DN_STOP_WAIT_MS 2000

/* libunwind's remote interface, declared here (as the library does for
 * libunwind.so.8) so that building pyprof needs no libunwind-dev: the
 * functions are the architecture's (_Ux86_64_...), a cursor is opaque
 * (127 words on x86-64, fewer than 4096 anywhere). */
#if defined(__x86_64__)
#define DN_UNW_LIB "libunwind-x86_64.so.8"
#define DN_UNW_PREFIX "_Ux86_64_"
#define DN_UNW_REG_IP 16
#elif defined(__aarch64__)
#define DN_UNW_LIB "libunwind-aarch64.so.8"
#define DN_UNW_PREFIX "_Uaarch64_"
#define DN_UNW_REG_IP 32
#else
#define DN_UNW_LIB ""
#define DN_UNW_PREFIX NULL
#define DN_UNW_REG_IP 0
#endif
#define DN_UNW_CURSOR_WORDS 4096

typedef uint64_t unw_word;
struct dn_unw {
	void *(*create_addr_space)(void *accessors, int byteorder);
	void (*destroy_addr_space)(void *as);
	int (*set_caching_policy)(void *as, int policy);
	int (*init_remote)(void *cursor, void *as, void *arg);
	int (*step)(void *cursor);
	int (*get_reg)(void *cursor, int reg, unw_word *val);
	void *(*upt_create)(pid_t tid);
	void (*upt_destroy)(void *arg);
	void *upt_accessors;
};

struct dn_map {
	uint64_t start, end, offset;
	char *path;
};

struct dn_thread {
	pid_t tid;
	int seized;  /* ours to detach                               */
	int stopped; /* reported its stop: registers can be read     */
	int sig;     /* a signal it was about to get: given back     */
	int n_pc;
	int unwind_err; /* libunwind could not start                    */
	uint64_t pc[DN_MAX_FRAMES];
};

struct dn {
	pid_t pid;
	pid_t eperm_tid; /* the thread that could not be seized */
	int n_threads;
	struct dn_thread *th;
	int n_maps;
	struct dn_map maps[DN_MAX_MAPS];
	uint64_t vdso_start, vdso_end; /* the target's [vdso], or 0 */
};

static int unw_load(struct dn_unw *u, char *why, size_t n)
{
	void *x, *p;
	char name[64];

	if (!DN_UNW_PREFIX) {
		snprintf(why, n, "this architecture is not supported");
		return -1;
	}
	/* libunwind-ptrace.so.0 names the architecture's functions without
	 * depending on their library: that one first, global */
	x = dlopen(DN_UNW_LIB, RTLD_NOW | RTLD_GLOBAL);
	p = x ? dlopen("libunwind-ptrace.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!x || !p) {
		snprintf(why, n, "cannot load libunwind's remote unwinder (%s); "
				 "install libunwind8",
			 dlerror());
		return -1;
	}
#define DN_SYM(lib, field, sym)                                               \
	do {                                                                  \
		snprintf(name, sizeof name, "%s%s", DN_UNW_PREFIX, sym);      \
		*(void **)&u->field = dlsym(lib, sym[0] == '_' ? sym : name); \
		if (!u->field) {                                              \
			snprintf(why, n, "libunwind has no %s",               \
				 sym[0] == '_' ? sym : name);                 \
			return -1;                                            \
		}                                                             \
	} while (0)
	DN_SYM(x, create_addr_space, "create_addr_space");
	DN_SYM(x, destroy_addr_space, "destroy_addr_space");
	DN_SYM(x, set_caching_policy, "set_caching_policy");
	DN_SYM(x, init_remote, "init_remote");
	DN_SYM(x, step, "step");
	DN_SYM(x, get_reg, "get_reg");
	DN_SYM(p, upt_create, "_UPT_create");
	DN_SYM(p, upt_destroy, "_UPT_destroy");
	DN_SYM(p, upt_accessors, "_UPT_accessors");
#undef DN_SYM
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int has_thread(const struct dn *d, pid_t tid)
{
	for (int i = 0; i < d->n_threads; i++)
		if (d->th[i].tid == tid)
			return 1;
	return 0;
}

/* Seizes and interrupts the threads of /proc/PID/task not seized yet.
 * The number of new ones, or -errno of the first seize that failed for
 * want of rights. */
static int seize_new(struct dn *d)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int added = 0;

	snprintf(path, sizeof path, "/proc/%d/task", (int)d->pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((e = readdir(dir)) && d->n_threads < DN_MAX_THREADS) {
		pid_t tid = (pid_t)atoi(e->d_name);
		struct dn_thread *t;

		if (tid <= 0 || has_thread(d, tid))
			continue;
		t = &d->th[d->n_threads];
		memset(t, 0, sizeof *t);
		t->tid = tid;
		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
			/* rights are the process's: a thread that is not
			 * ours has a tracer already */
			if (errno == EPERM) {
				d->eperm_tid = tid;
				closedir(dir);
				return -EPERM;
			}
			continue; /* gone already */
		}
		t->seized = 1;
		d->n_threads++;
		added++;
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0)
			t->seized = 0; /* exited between the two */
	}
	closedir(dir);
	return added;
}

/* Waits for the stop of each seized thread, up to DN_STOP_WAIT_MS in all.
 * A thread that was about to receive a signal reports that first: it is
 * stopped then too, and the signal is kept to give back. */
static void wait_stops(struct dn *d)
{
	double until = now_ms() + DN_STOP_WAIT_MS;
	int left;

	do {
		left = 0;
		for (int i = 0; i < d->n_threads; i++) {
			struct dn_thread *t = &d->th[i];
			int st;
			pid_t r;

			if (!t->seized || t->stopped)
				continue;
			r = waitpid(t->tid, &st, __WALL | WNOHANG);
			if (r == 0) {
				left++;
				continue;
			}
			if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
				t->seized = 0;
				continue;
			}
			t->stopped = 1;
			/* not SIGTRAP: the one a traced execve gets (its
			 * new program would die of it) */
			if (WIFSTOPPED(st) && (st >> 16) == 0 &&
			    WSTOPSIG(st) != SIGTRAP)
				t->sig = WSTOPSIG(st);
		}
		if (left) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	} while (left && now_ms() < until);
}

static int dn_stop(struct dn *d)
{
	int r;

	/* threads started while we stop the others: a few rounds */
	for (int round = 0; round < 8; round++) {
		r = seize_new(d);
		if (r < 0)
			return r;
		wait_stops(d);
		if (r == 0)
			break;
	}
	return 0;
}

static void dn_resume(struct dn *d)
{
	for (int i = 0; i < d->n_threads; i++) {
		struct dn_thread *t = &d->th[i];

		if (t->seized)
			ptrace(PTRACE_DETACH, t->tid, NULL,
			       (void *)(intptr_t)t->sig);
		t->seized = 0;
	}
}

#if defined(__x86_64__)
/*
 * The kernel's vDSO (clock_gettime, gettimeofday) has no file for
 * libunwind to read its unwind tables from: a thread stopped inside it
 * was unwound by guess, and from the frame above it on 3.14's libc the
 * guess went wrong (the whole stack lost: "[merge failed: 0 eval-loop
 * calls ...]", 5 tries in 8). The vDSO keeps frame pointers (push %rbp;
 * mov %rsp,%rbp), so its caller is found from the registers here, and
 * libunwind starts from the caller: its registers read through
 * access_reg, with IP, SP and RBP the caller's (dn_regs).
 */
#define DN_REG_RBP 6
#define DN_REG_RSP 7
#define DN_ACCESSORS_WORDS 12

typedef int (*dn_access_reg_fn)(void *as, int reg, unw_word *val, int write,
				void *arg);
static dn_access_reg_fn dn_upt_access_reg;
static struct {
	int on;
	unw_word ip, sp, bp;
} dn_regs;

static int dn_access_reg(void *as, int reg, unw_word *val, int write, void *arg)
{
	if (dn_regs.on && !write) {
		if (reg == DN_UNW_REG_IP) {
			*val = dn_regs.ip;
			return 0;
		}
		if (reg == DN_REG_RSP) {
			*val = dn_regs.sp;
			return 0;
		}
		if (reg == DN_REG_RBP) {
			*val = dn_regs.bp;
			return 0;
		}
	}
	return dn_upt_access_reg(as, reg, val, write, arg);
}

static int peek(pid_t tid, uint64_t addr, uint64_t *out)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)addr, NULL);
	if (errno)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/* Thread tid stopped at ip, inside the vDSO: its caller's ip, sp and bp
 * into dn_regs, by where ip stands in its function's frame. 0 or -1. */
static int vdso_caller(pid_t tid, uint64_t ip)
{
	struct user_regs_struct r;
	uint64_t code, ret, bp;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &r) < 0 || peek(tid, ip, &code))
		return -1;
	unsigned b0 = code & 0xff, b013 = code & 0xffffff;
	if (b0 == 0xc3 || b0 == 0x55) { /* at ret, or at push %rbp */
		if (peek(tid, r.rsp, &ret))
			return -1;
		dn_regs.sp = r.rsp + 8;
		dn_regs.bp = r.rbp;
	} else if (b013 == 0xe58948) { /* mov %rsp,%rbp: %rbp pushed */
		if (peek(tid, r.rsp + 8, &ret) || peek(tid, r.rsp, &bp))
			return -1;
		dn_regs.sp = r.rsp + 16;
		dn_regs.bp = bp;
	} else { /* in the body: the frame pointer's chain */
		if (peek(tid, r.rbp + 8, &ret) || peek(tid, r.rbp, &bp))
			return -1;
		dn_regs.sp = r.rbp + 16;
		dn_regs.bp = bp;
	}
	dn_regs.ip = ret;
	dn_regs.on = 1;
	return 0;
}
#endif

/* Whether pc is in the target's vDSO (read_maps notes where). */
static int in_vdso(const struct dn *d, uint64_t pc)
{
	return d->vdso_end && pc >= d->vdso_start && pc < d->vdso_end;
}

static void unwind_all(struct dn *d, const struct dn_unw *u)
{
	void *acc = u->upt_accessors;
#if defined(__x86_64__)
	/* libunwind's accessors, with access_reg (the fifth) ours */
	static void *mine[DN_ACCESSORS_WORDS];
	memcpy(mine, u->upt_accessors, sizeof mine);
	*(void **)&dn_upt_access_reg = mine[4];
	mine[4] = (void *)dn_access_reg;
	acc = mine;
#endif
	void *as = u->create_addr_space(acc, 0);
	unw_word *cursor = calloc(DN_UNW_CURSOR_WORDS, sizeof *cursor);

	/* the unwind tables read once for all the threads (UNW_CACHE_GLOBAL) */
	if (as)
		u->set_caching_policy(as, 1);

	for (int i = 0; as && cursor && i < d->n_threads; i++) {
		struct dn_thread *t = &d->th[i];
		void *ui;

		if (!t->stopped || !t->seized)
			continue;
		ui = u->upt_create(t->tid);
		if (!ui || u->init_remote(cursor, as, ui) < 0) {
			t->unwind_err = 1;
			if (ui)
				u->upt_destroy(ui);
			continue;
		}
		unw_word ip0;
#if defined(__x86_64__)
		/* stopped in the vDSO: its frame here, libunwind from its
		 * caller */
		if (u->get_reg(cursor, DN_UNW_REG_IP, &ip0) == 0 &&
		    in_vdso(d, ip0) && vdso_caller(t->tid, ip0) == 0) {
			/* (its registers are read as it steps: the caller's
			 * stay in force until this thread is done) */
			int rc = u->init_remote(cursor, as, ui);
			if (rc < 0) {
				dn_regs.on = 0;
				t->unwind_err = 1;
				u->upt_destroy(ui);
				continue;
			}
			t->pc[t->n_pc++] = ip0;
		}
#else
		(void)ip0;
#endif
		do {
			unw_word ip;

			if (u->get_reg(cursor, DN_UNW_REG_IP, &ip) < 0 || !ip)
				break;
			t->pc[t->n_pc++] = ip;
		} while (t->n_pc < DN_MAX_FRAMES && u->step(cursor) > 0);
#if defined(__x86_64__)
		dn_regs.on = 0;
#endif
		u->upt_destroy(ui);
	}
	free(cursor);
	if (as)
		u->destroy_addr_space(as);
}

static void read_maps(struct dn *d)
{
	char path[64], line[4096 + 128];
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/maps", (int)d->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof line, f) && d->n_maps < DN_MAX_MAPS) {
		unsigned long long s, e, off;
		char perm[8];
		int at = 0;
		char *p;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perm,
			   &off, &at) < 4 ||
		    !at || perm[2] != 'x')
			continue;
		p = line + at;
		p[strcspn(p, "\n")] = '\0';
		/* files, and the kernel's vDSO (elfsym reads ours for it:
		 * clock_gettime and its like run there) */
		if (p[0] != '/' && strcmp(p, "[vdso]"))
			continue;
		if (p[0] != '/') {
			d->vdso_start = s;
			d->vdso_end = e;
		}
		d->maps[d->n_maps].start = s;
		d->maps[d->n_maps].end = e;
		d->maps[d->n_maps].offset = off;
		d->maps[d->n_maps].path = strdup(p);
		if (d->maps[d->n_maps].path)
			d->n_maps++;
	}
	fclose(f);
}

static const struct dn_map *find_map(const struct dn *d, uint64_t pc)
{
	for (int i = 0; i < d->n_maps; i++)
		if (pc >= d->maps[i].start && pc < d->maps[i].end)
			return &d->maps[i];
	return NULL;
}

/* One native frame, named. */
struct dn_frame {
	char text[512]; /* "name (where)"                             */
	int interp;	/* in the interpreter's own file              */
	int eval;	/* a call of the eval loop                    */
};

static void name_frame(const struct dn *d, struct elfsym *es,
		       struct dump_eval *ev, const struct attach_target *tg,
		       uint64_t pc, int inner, struct dn_frame *f)
{
	const struct dn_map *m = find_map(d, pc);
	/* a return address is in the call's line: one byte back */
	uint64_t at = inner ? pc : pc - 1;
	struct elfsym_hit hit;
	const char *base;

	memset(f, 0, sizeof *f);
	if (!m) {
		snprintf(f->text, sizeof f->text, "0x%llx (?)",
			 (unsigned long long)pc);
		return;
	}
	base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
	f->interp = !strcmp(m->path, tg->exe) || !strncmp(base, "libpython", 9);
	memset(&hit, 0, sizeof hit);
	if (es && elfsym_lookup(es, m->path, NULL, 0, m->start, m->offset, at, &hit) && hit.name) {
		if (f->interp) {
			struct dump_eval *e = &ev[0];

			if (e->path && strcmp(e->path, m->path))
				e = &ev[1];
			if (!e->path && (e->path = strdup(m->path)))
				dump_eval_find(e, m->path);
			f->eval = !strncmp(hit.name, "_PyEval_EvalFrameDefault",
					   24) ||
				  (e->path && !strcmp(e->path, m->path) &&
				   dump_eval_contains(e, hit.vaddr));
		}
		if (hit.src_file && hit.src_line)
			snprintf(f->text, sizeof f->text, "%s (%s:%u)",
				 hit.name, hit.src_file, hit.src_line);
		else
			snprintf(f->text, sizeof f->text, "%s (%s)", hit.name,
				 base);
		cmd_printable_lines(f->text);
		return;
	}
	snprintf(f->text, sizeof f->text, "0x%llx (%s)",
		 (unsigned long long)pc, base);
	cmd_printable_lines(f->text);
}

/* The Python half of one thread, as the reader wrote it: frames innermost
 * first, group ends (the reader's "<native>" entries) marked. */
struct dn_py {
	int n;
	int marked; /* the reader marks the groups             */
	const char *line[DN_MAX_FRAMES];
	int line_len[DN_MAX_FRAMES];
	int group_end[DN_MAX_FRAMES]; /* frame i is its group's outermost */
};

/* Finds thread tid in the reader's output ("T\tTID\tMARKED", then
 * "F\tfunc (file:line)" and "N" lines). 1 if found. */
static int py_find(const char *out, pid_t tid, struct dn_py *py)
{
	char head[64];
	const char *p;
	int hn = snprintf(head, sizeof head, "T\t%d\t", (int)tid);

	memset(py, 0, sizeof *py);
	for (p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, head, (size_t)hn))
			break;
	if (!p || !*p)
		return 0;
	py->marked = p[hn] == '1';
	for (p = strchr(p, '\n'); p && p[1] && p[1] != 'T'; p = strchr(p + 1, '\n')) {
		const char *l = p + 1, *e = strchr(l, '\n');
		int len = e ? (int)(e - l) : (int)strlen(l);

		if (l[0] == 'N') {
			if (py->n)
				py->group_end[py->n - 1] = 1;
		} else if (l[0] == 'F' && py->n < DN_MAX_FRAMES) {
			py->line[py->n] = l + 2;
			py->line_len[py->n] = len - 2;
			py->n++;
		}
	}
	return 1;
}

static void print_py(const struct dn_py *py, int from, int to)
{
	for (int i = from; i < to; i++)
		printf("    %.*s\n", py->line_len[i], py->line[i]);
}

/*
 * Prints one thread's merged stack, innermost first. nf: its native
 * frames, innermost first.
 */
static void print_merged(const struct dn_frame *nf, int n,
			 const struct dn_py *py, int major, int minor)
{
	int eval[DN_MAX_FRAMES], n_eval = 0, n_groups = 0;

	for (int i = 0; i < n; i++)
		if (nf[i].eval)
			eval[n_eval++] = i;
	for (int i = 0; i < py->n; i++)
		n_groups += py->group_end[i];
	if (!py->n) {
		for (int i = 0; i < n; i++)
			printf("    %s\n", nf[i].text);
		if (!n)
			printf("    (no frame)\n");
		return;
	}
	if (py->marked && n_eval && n_groups == n_eval) {
		/* each eval call is its group; between two, the
		 * interpreter's frames fold away, others stay */
		int g = 0, at = 0;

		for (int i = 0; i < n; i++) {
			if (nf[i].eval) {
				int from = at;

				while (at < py->n && !py->group_end[at])
					at++;
				at++;
				print_py(py, from, at);
				g++;
			} else if (g == 0 || g == n_eval || !nf[i].interp) {
				printf("    %s\n", nf[i].text);
			}
		}
		return;
	}
	if (!py->marked && n_eval) {
		/* 3.14's reader stops at the first frame a C call entered
		 * (it gives the innermost eval call's group only): that group
		 * replaces the innermost call; the outer calls stay as native
		 * frames, named, their Python frames unread */
		for (int i = 0; i < eval[0]; i++)
			printf("    %s\n", nf[i].text);
		print_py(py, 0, py->n);
		if (n_eval > 1)
			printf("    [the Python frames of %d outer eval-loop "
			       "calls are not read: Python %d.%d's reader stops "
			       "at the innermost]\n",
			       n_eval - 1, major, minor);
		for (int i = eval[0] + 1; i < n; i++)
			if (nf[i].eval)
				printf("    _PyEval_EvalFrameDefault %s\n",
				       strchr(nf[i].text, '('));
			else
				printf("    %s\n", nf[i].text);
		return;
	}
	/* the two stacks do not line up: what is certain */
	for (int i = 0; i < (n_eval ? eval[0] : 0); i++)
		printf("    %s\n", nf[i].text);
	print_py(py, 0, py->n);
	printf("    [merge failed: %d eval-loop calls, %d Python frames in %d "
	       "calls]\n",
	       n_eval, py->n, n_groups);
}

static void thread_name(pid_t pid, pid_t tid, char *out, size_t n)
{
	char path[64];
	FILE *f;

	if (tid == pid) {
		snprintf(out, n, "MainThread");
		return;
	}
	snprintf(out, n, "?");
	snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid,
		 (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)n, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
	cmd_printable_lines(out);
}

/* The TracerPid of a thread: 0 (none), or -1 if unknown. */
static long tracer_of(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	long tracer = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid,
		 (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct dn_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* One thread: its name, then its merged stack (nf, py: room for it). */
static void print_thread(const struct dn *d, const struct dn_thread *t,
			 const struct attach_target *tg, const char *out,
			 struct elfsym *es, struct dump_eval *ev,
			 struct dn_frame *nf, struct dn_py *py)
{
	char name[64];

	thread_name(tg->pid, t->tid, name, sizeof name);
	printf("Thread %d \"%s\"\n", (int)t->tid, name);
	if (!t->stopped) {
		printf("    (not stopped: its native stack is not read)\n");
		if (py_find(out, t->tid, py))
			print_py(py, 0, py->n);
		return;
	}
	if (t->unwind_err)
		printf("    [native unwind failed]\n");
	if (t->n_pc == DN_MAX_FRAMES)
		printf("    [native stack truncated: the %d innermost "
		       "frames]\n",
		       DN_MAX_FRAMES);
	for (int j = 0; j < t->n_pc; j++)
		name_frame(d, es, ev, tg, t->pc[j], j == 0, &nf[j]);
	if (!py_find(out, t->tid, py))
		py->n = 0;
	print_merged(nf, t->n_pc, py, tg->major, tg->minor);
}

int dump_native(const struct attach_target *tg, const char *code)
{
	static struct dn d;
	struct dn_frame *nf = NULL;
	struct dn_unw u;
	struct elfsym *es = NULL;
	struct dn_py *py = NULL;
	/* the executable and libpython: the interpreter's files */
	struct dump_eval ev[2];
	char why[512], err[1024];
	sigset_t block, old;
	struct attach_run run;
	char *out = NULL;
	int rc = 1, r;

	memset(&d, 0, sizeof d);
	memset(ev, 0, sizeof ev);
	d.pid = tg->pid;
	if (unw_load(&u, why, sizeof why) < 0) {
		log_error("dump --native: %s", why);
		return 1;
	}
	d.th = calloc(DN_MAX_THREADS, sizeof *d.th);
	out = malloc(DUMP_OUT_MAX);
	nf = calloc(DN_MAX_FRAMES, sizeof *nf);
	py = calloc(1, sizeof *py);
	es = elfsym_new();
	if (!d.th || !out || !nf || !py || !es) {
		log_error("out of memory");
		goto done;
	}
	/* no Ctrl-C while threads are stopped: a signal one was about to
	 * get would be lost with us (it is delivered to pyprof after) */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	r = dn_stop(&d);
	if (r < 0) {
		long tracer = tracer_of(tg->pid, d.eperm_tid);

		dn_resume(&d);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (r == -EPERM && tracer > 0)
			log_error("dump --native: process %d is traced by process "
				  "%ld (a debugger?), and a thread has one tracer "
				  "only: `pyprof dump %d` without --native reads its "
				  "Python stacks",
				  (int)tg->pid, tracer, (int)tg->pid);
		else
			log_error("dump --native: cannot stop the threads of "
				  "process %d to read their registers (ptrace: "
				  "%s)",
				  (int)tg->pid, strerror(-r));
		goto done;
	}
	/* everything is read while the threads stand still */
	/* the reader runs while the threads are unwound: the stop lasts
	 * the longer of the two, not both */
	err[0] = '\0';
	r = attach_run_python_start(tg, code, &run);
	read_maps(&d); /* first: where the vDSO is, for the unwind */
	unwind_all(&d, &u);
	if (r == 0)
		r = attach_run_python_finish(&run, out, DUMP_OUT_MAX, err,
					     sizeof err);
	dn_resume(&d);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		log_error("cannot read the stacks of process %d: %s",
			  (int)tg->pid, err[0] ? err : "the interpreter failed");
		goto done;
	}
	qsort(d.th, (size_t)d.n_threads, sizeof *d.th, cmp_thread);
	/* the target's names reach the terminal as text, not escapes */
	cmd_printable_lines(out);
	printf("Process %d: %s (Python %d.%d, %s)\n", (int)tg->pid, tg->comm,
	       tg->major, tg->minor, tg->exe);
	for (int i = 0; i < d.n_threads; i++) /* the main thread first */
		if (d.th[i].tid == tg->pid)
			print_thread(&d, &d.th[i], tg, out, es, ev, nf, py);
	for (int i = 0; i < d.n_threads; i++)
		if (d.th[i].tid != tg->pid)
			print_thread(&d, &d.th[i], tg, out, es, ev, nf, py);
	rc = fflush(stdout) == 0 ? 0 : 1;
done:
	free(ev[0].path);
	free(ev[1].path);
	for (int i = 0; i < d.n_maps; i++)
		free(d.maps[i].path);
	elfsym_free(es);
	free(py);
	free(nf);
	free(out);
	free(d.th);
	return rc;
}
