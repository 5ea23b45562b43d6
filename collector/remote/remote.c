/*
 * remote.c - reading a running CPython process from outside (remote.h).
 */
#include "remote/remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyprof/pyabi.h"
#include "symbols/elfsym.h"

/* Through /proc/PID/mem: what process_vm_readv/writev cannot do (a kernel
 * without them, a seccomp profile refusing them). */
static int mem_io(pid_t pid, uint64_t addr, void *buf, size_t n, int write_)
{
	char path[64];
	int fd;
	ssize_t r;

	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	fd = open(path, (write_ ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_ ? pwrite(fd, buf, n, (off_t)addr)
		   : pread(fd, buf, n, (off_t)addr);
	if (r < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return (int)r == -EIO ? -EFAULT : (int)r;
	return (size_t)r == n ? 0 : -EFAULT;
}

static int vm_io(pid_t pid, uint64_t addr, void *buf, size_t n, int write_)
{
	struct iovec local = { buf, n };
	struct iovec far = { (void *)(uintptr_t)addr, n };
	ssize_t r;

	if (n == 0)
		return 0;
	if (addr + n < addr)
		return -EFAULT;
	r = write_ ? process_vm_writev(pid, &local, 1, &far, 1, 0)
		   : process_vm_readv(pid, &local, 1, &far, 1, 0);
	if (r == (ssize_t)n)
		return 0;
	if (r >= 0)
		return -EFAULT;
	if (errno == ENOSYS || errno == EPERM)
		return mem_io(pid, addr, buf, n, write_);
	return -errno;
}

int remote_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	return vm_io(pid, addr, buf, n, 0);
}

int remote_write(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
	return vm_io(pid, addr, (void *)buf, n, 1);
}

static void say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

/* pyabi's reads (one process at a time: the commands are single-threaded) */
static pid_t read_pid;

static int read_target(void *dst, const void *src, size_t n)
{
	return remote_read(read_pid, (uint64_t)(uintptr_t)src, dst, n) ? -1 : 0;
}

/* One file the target mapped from offset 0: where, and its path. */
struct mapped {
	uint64_t start, end;
	char path[REMOTE_PATH_MAX];
};

#define MAX_CANDIDATES 8

/* "3.9" from ".../libpython3.9.so.1.0" or ".../python3.9", or "". */
static void version_in_name(const char *path, const char *prefix, char *out,
			    size_t n)
{
	const char *base = strrchr(path, '/');
	size_t len;

	base = base ? base + 1 : path;
	out[0] = '\0';
	if (strncmp(base, prefix, strlen(prefix)) != 0)
		return;
	base += strlen(prefix);
	len = strspn(base, "0123456789.");
	while (len && base[len - 1] == '.')
		len--;
	if (len && len < n && strchr(base, '.'))
		snprintf(out, n, "%.*s", (int)len, base);
}

/* The files worth looking in: every libpython mapped, then the program.
 * Returns how many; sets py->lib_loaded and py->libpython. */
static int scan_maps(pid_t pid, struct remote_py *py, const char *exe,
		     struct mapped *cand, int max, int *err)
{
	char path[64], line[REMOTE_PATH_MAX + 128];
	FILE *f;
	int n = 0, exe_at = -1;

	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		*err = -errno;
		return 0;
	}
	while (fgets(line, sizeof line, f)) {
		unsigned long long start, end, off;
		int at = 0;
		const char *p;

		if (!strchr(line, '\n'))
			continue; /* a path longer than we keep */
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end,
			   &off, &at) < 3 ||
		    !at)
			continue;
		p = line + at;
		if (p[0] != '/')
			continue;
		if (strstr(p, "/libpyprof.so"))
			py->lib_loaded = 1;
		if (off != 0 || n >= max)
			continue;
		if (strstr(p, "/libpython")) {
			if (!py->libpython[0]) {
				const char *base = strrchr(p, '/') + 1;
				version_in_name(base, "libpython",
						py->libpython,
						sizeof py->libpython);
			}
		} else if (strcmp(p, exe) != 0 || exe_at >= 0) {
			continue;
		}
		cand[n].start = start;
		cand[n].end = end;
		snprintf(cand[n].path, sizeof cand[n].path, "%s", p);
		if (strcmp(p, exe) == 0)
			exe_at = n;
		n++;
	}
	fclose(f);
	/* libpython before the program: a program that embeds it (uwsgi)
	 * may also hold a symbol of that name of its own */
	if (exe_at >= 0 && exe_at != n - 1) {
		struct mapped t = cand[exe_at];
		memmove(&cand[exe_at], &cand[exe_at + 1],
			(size_t)(n - 1 - exe_at) * sizeof *cand);
		cand[n - 1] = t;
	}
	return n;
}

/* Where name (a section if section) lies in the target, through the
 * mapped file m: 0 with *addr, or -ENOENT. */
static int locate(pid_t pid, const struct mapped *m, const char *name,
		  int section, uint64_t *addr)
{
	char file[128];
	uint64_t vaddr, base, size;
	int rc;

	/* the very file mapped, even if its path was replaced since */
	snprintf(file, sizeof file, "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	rc = elfsym_find(access(file, R_OK) == 0 ? file : m->path, name,
			 section, &vaddr, &base, &size);
	if (rc < 0)
		return rc;
	if (vaddr < base)
		return -ENOENT;
	*addr = m->start + (vaddr - base);
	return 0;
}

/* The version in py->runtime's block, or from Py_Version (3.11, 3.12). */
static void find_version(pid_t pid, struct remote_py *py,
			 const struct mapped *m)
{
	uint64_t hex = 0, at;
	int ft = 0;

	read_pid = pid;
	if (py->runtime &&
	    pyabi_debug_version((const void *)(uintptr_t)py->runtime,
				read_target, &hex, &ft) == 0) {
		py->from_block = 1;
		py->free_threaded = ft;
	} else if (locate(pid, m, "Py_Version", 0, &at) == 0) {
		uint32_t v;
		if (remote_read(pid, at, &v, sizeof v) == 0)
			hex = v;
	}
	if (hex >> 24 == 2 || hex >> 24 == 3) {
		py->major = (int)(hex >> 24 & 0xff);
		py->minor = (int)(hex >> 16 & 0xff);
		py->micro = (int)(hex >> 8 & 0xff);
		return;
	}
	py->from_block = 0;
	/* before 3.11 (or a block not read): the file's name */
	{
		char v[32];
		const char *base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		version_in_name(base, "libpython", v, sizeof v);
		if (!v[0])
			version_in_name(base, "python", v, sizeof v);
		if (v[0])
			sscanf(v, "%d.%d", &py->major, &py->minor);
	}
}

int remote_py_find(pid_t pid, struct remote_py *py, char *why, size_t why_len)
{
	struct mapped *cand;
	char link[64], exe[REMOTE_PATH_MAX];
	ssize_t len;
	int n, err = 0;

	memset(py, 0, sizeof *py);
	py->pid = pid;
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof exe - 1);
	exe[len > 0 ? len : 0] = '\0';
	cand = calloc(MAX_CANDIDATES, sizeof *cand);
	if (!cand)
		return -ENOMEM;
	n = scan_maps(pid, py, exe, cand, MAX_CANDIDATES, &err);
	if (err) {
		free(cand);
		say(why, why_len, "cannot read /proc/%d/maps: %s", (int)pid,
		    strerror(-err));
		return err;
	}
	for (int i = 0; i < n; i++) {
		uint64_t rt;
		static const char *const names[] = { "_PyRuntime", "Py_Version",
						     "PyEval_EvalFrameDefault",
						     "Py_Initialize" };

		if (locate(pid, &cand[i], ".PyRuntime", 1, &rt) != 0 &&
		    locate(pid, &cand[i], "_PyRuntime", 0, &rt) != 0)
			rt = 0;
		if (!rt) {
			/* 2.7 and 3.6 have no _PyRuntime: CPython all the
			 * same if it holds the interpreter's functions */
			size_t k;
			uint64_t a;
			for (k = 1; k < sizeof names / sizeof *names; k++)
				if (locate(pid, &cand[i], names[k], 0, &a) == 0)
					break;
			if (k == sizeof names / sizeof *names)
				continue;
		}
		py->runtime = rt;
		py->map_start = cand[i].start;
		py->map_end = cand[i].end;
		snprintf(py->file, sizeof py->file, "%s", cand[i].path);
		find_version(pid, py, &cand[i]);
		free(cand);
		return 0;
	}
	free(cand);
	say(why, why_len, "its program is %s and it maps no file that holds "
			  "a CPython interpreter",
	    exe[0] ? exe : "unknown");
	return -ENOENT;
}

int remote_py_symbol(const struct remote_py *py, const char *name,
		     uint64_t *addr)
{
	struct mapped *m;
	int rc;

	if (!py->map_start)
		return -ENOENT;
	m = malloc(sizeof *m);
	if (!m)
		return -ENOMEM;
	m->start = py->map_start;
	m->end = py->map_end;
	snprintf(m->path, sizeof m->path, "%s", py->file);
	rc = locate(py->pid, m, name, 0, addr);
	free(m);
	return rc;
}

/* The offsets of the remote-exec fields, and the interpreter whose
 * threads take requests (runtime_state.interpreters_head's, as
 * sys.remote_exec's), after the checks: 0, or a negative errno (why). */
static int exec_layout(const struct remote_py *py, size_t path_len,
		       struct pyabi_remote_exec *o, uint64_t *interp, char *why,
		       size_t why_len)
{
	int32_t enabled = 0;
	int rc;

	*interp = 0;
	if (!py->runtime || !py->from_block) {
		say(why, why_len, "no _Py_DebugOffsets in process %d",
		    (int)py->pid);
		return -ENOTSUP;
	}
	read_pid = py->pid;
	rc = pyabi_remote_exec_offsets(py->major, py->minor,
				       (const void *)(uintptr_t)py->runtime,
				       read_target, o, why, why_len);
	if (rc < 0)
		return rc;
	if (path_len + 1 > o->script_path_size) {
		say(why, why_len, "the script's path is longer than %llu bytes",
		    (unsigned long long)o->script_path_size - 1);
		return -ENAMETOOLONG;
	}
	if ((rc = remote_read(py->pid, py->runtime + o->interp_head, interp,
			      sizeof *interp)) < 0 ||
	    (rc = *interp ? remote_read(py->pid, *interp + o->remote_enabled,
					&enabled, sizeof enabled)
			  : -EFAULT) < 0) {
		say(why, why_len, "cannot read process %d's interpreter: %s",
		    (int)py->pid, strerror(-rc));
		return rc;
	}
	if (enabled != 1) {
		say(why, why_len, "remote debugging is not enabled in process "
				  "%d",
		    (int)py->pid);
		return -ENOTSUP;
	}
	return 0;
}

/* The request into thread state ts: the path, then the flag, then the
 * breaker, so that the target never sees the flag before the path is
 * whole. The breaker's read and write are not one atomic operation: a
 * bit the target sets between them (a GIL drop request, a signal) would
 * be lost, as with sys.remote_exec, which writes it the same way. */
static int request(const struct remote_py *py,
		   const struct pyabi_remote_exec *o, uint64_t ts,
		   const char *script)
{
	uint64_t breaker = 0;
	int32_t one = 1;
	int rc;

	if ((rc = remote_write(py->pid, ts + o->script_path, script,
			       strlen(script) + 1)) < 0 ||
	    (rc = remote_write(py->pid, ts + o->pending_call, &one,
			       sizeof one)) < 0 ||
	    (rc = remote_read(py->pid, ts + o->eval_breaker, &breaker,
			      sizeof breaker)) < 0)
		return rc;
	breaker |= o->please_stop_bit;
	return remote_write(py->pid, ts + o->eval_breaker, &breaker,
			    sizeof breaker);
}

/* Whether thread state ts holds a request pending (1), for script when
 * script is not NULL; 0 if not; a negative errno when it cannot be read. */
static int pending(const struct remote_py *py,
		   const struct pyabi_remote_exec *o, uint64_t ts,
		   const char *script)
{
	char path[REMOTE_PATH_MAX];
	size_t len = script ? strlen(script) + 1 : 0;
	int32_t flag = 0;
	int rc;

	if ((rc = remote_read(py->pid, ts + o->pending_call, &flag,
			      sizeof flag)) < 0)
		return rc;
	if (flag != 1)
		return 0;
	if (!script)
		return 1;
	if (len > sizeof path || len > o->script_path_size)
		return 0;
	if ((rc = remote_read(py->pid, ts + o->script_path, path, len)) < 0)
		return rc;
	return memcmp(path, script, len) == 0;
}

int remote_exec(const struct remote_py *py, const char *script, char *why,
		size_t why_len)
{
	struct pyabi_remote_exec o;
	uint64_t interp, ts = 0;
	int rc = exec_layout(py, strlen(script), &o, &interp, why, why_len);

	if (rc < 0)
		return rc;
	if ((rc = remote_read(py->pid, interp + o.threads_main, &ts,
			      sizeof ts)) < 0) {
		say(why, why_len, "cannot read process %d's interpreter: %s",
		    (int)py->pid, strerror(-rc));
		return rc;
	}
	if (!ts) {
		say(why, why_len, "process %d has no main thread state (it is "
				  "finalizing?)",
		    (int)py->pid);
		return -ESRCH;
	}
	rc = request(py, &o, ts, script);
	if (rc < 0)
		say(why, why_len, "cannot write into process %d: %s",
		    (int)py->pid, strerror(-rc));
	return rc;
}

/*
 * Every thread of the target stopped while thread states other than the
 * main one are written: a thread that ends frees its state (PyMem_Raw),
 * and a write that came after would land in memory the program uses for
 * something else. PTRACE_SEIZE and PTRACE_INTERRUPT make a ptrace stop,
 * not a signal: a blocking call is restarted by the kernel when the
 * thread resumes, the program sees no EINTR and runs no handler (as
 * `dump --native` stops them). A thread stopped halfway through its end
 * has unlinked its state first (CPython unlinks, then frees): the walk
 * does not reach it. Threads started meanwhile are seized in further
 * rounds. A signal a thread received meanwhile is given back at the
 * detach.
 */
#define REMOTE_STOP_WAIT_MS 2000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
struct stopped {
	pid_t *tid;
	int *sig;
	int n, cap;
};

static int stopped_has(const struct stopped *s, pid_t tid)
{
	for (int i = 0; i < s->n; i++)
		if (s->tid[i] == tid)
			return 1;
	return 0;
}

static void resume_all(struct stopped *s)
{
	for (int i = 0; i < s->n; i++)
		ptrace(PTRACE_DETACH, s->tid[i], NULL,
		       (void *)(intptr_t)s->sig[i]);
	free(s->tid);
	free(s->sig);
	memset(s, 0, sizeof *s);
}

/* Seizes the threads of /proc/PID/task not seized yet and waits for their
 * stops: the number of new ones, or a negative errno (-EPERM: a tracer
 * is there already, or no right). */
static int stop_new(pid_t pid, struct stopped *s)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int added = 0, rc = 0;
	double until;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return -errno;
	while ((e = readdir(dir))) {
		pid_t tid = (pid_t)atoi(e->d_name), r;
		int st = 0;

		if (tid <= 0 || stopped_has(s, tid))
			continue;
		if (s->n == s->cap) {
			int cap = s->cap ? 2 * s->cap : 64;
			pid_t *t = realloc(s->tid, (size_t)cap * sizeof *t);
			int *g = t ? realloc(s->sig, (size_t)cap * sizeof *g)
				   : NULL;

			if (t)
				s->tid = t;
			if (!t || !g) {
				rc = -ENOMEM;
				break;
			}
			s->sig = g;
			s->cap = cap;
		}
		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
			if (errno == EPERM) {
				rc = -EPERM;
				break;
			}
			continue; /* gone already */
		}
		s->tid[s->n] = tid;
		s->sig[s->n] = 0;
		s->n++;
		added++;
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0)
			continue; /* ended between the two */
		until = now_ms() + REMOTE_STOP_WAIT_MS;
		while ((r = waitpid(tid, &st, __WALL | WNOHANG)) == 0) {
			struct timespec ts = { 0, 200000 };

			if (now_ms() > until) {
				rc = -ETIMEDOUT; /* uninterruptible I/O */
				break;
			}
			nanosleep(&ts, NULL);
		}
		/* a signal that came first is reported first, the thread
		 * stopped with it: kept to give back (not SIGTRAP, which a
		 * traced execve gets) */
		if (rc == 0 && r > 0 && WIFSTOPPED(st) && (st >> 16) == 0 &&
		    WSTOPSIG(st) != SIGTRAP)
			s->sig[s->n - 1] = WSTOPSIG(st);
		if (rc < 0)
			break;
	}
	closedir(dir);
	return rc < 0 ? rc : added;
}

/* 0 with every thread stopped, or a negative errno with none. */
static int stop_all(pid_t pid, struct stopped *s)
{
	int rc = 0;

	memset(s, 0, sizeof *s);
	for (int round = 0; round < 8; round++)
		if ((rc = stop_new(pid, s)) <= 0)
			break;
	if (rc < 0)
		resume_all(s);
	return rc < 0 ? rc : 0;
}

/* Every thread state of the interpreter, at most REMOTE_THREADS_MAX (a
 * list that loops or runs on is cut there): fn(ts, arg) for each, which
 * stops the walk by returning non-zero. 0, or a read's negative errno. */
#define REMOTE_THREADS_MAX 4096
static int each_thread(const struct remote_py *py,
		       const struct pyabi_remote_exec *o, uint64_t interp,
		       int (*fn)(uint64_t ts, void *arg), void *arg)
{
	uint64_t ts = 0;
	int rc = remote_read(py->pid, interp + o->threads_head, &ts,
			     sizeof ts);

	for (int i = 0; rc == 0 && ts && i < REMOTE_THREADS_MAX; i++) {
		if (fn(ts, arg))
			break;
		rc = remote_read(py->pid, ts + o->ts_next, &ts, sizeof ts);
	}
	return rc;
}

struct exec_walk {
	const struct remote_py *py;
	const struct pyabi_remote_exec *o;
	const char *script;
	uint64_t main_ts;
	int n;		  /* thread states acted on           */
	int main_pending; /* the main one still holds ours     */
};

static int spread_one(uint64_t ts, void *arg)
{
	struct exec_walk *w = arg;

	/* not the main thread's (it has ours), nor one holding another
	 * debugger's request */
	if (ts == w->main_ts || pending(w->py, w->o, ts, NULL) != 0)
		return 0;
	if (request(w->py, w->o, ts, w->script) == 0)
		w->n++;
	return 0;
}

int remote_exec_spread(const struct remote_py *py, const char *script,
		       char *why, size_t why_len)
{
	struct pyabi_remote_exec o;
	struct exec_walk w = { .py = py, .o = &o, .script = script };
	uint64_t interp;
	int rc = exec_layout(py, strlen(script), &o, &interp, why, why_len);

	if (rc < 0)
		return rc;
	if ((rc = remote_read(py->pid, interp + o.threads_main, &w.main_ts,
			      sizeof w.main_ts)) < 0 ||
	    (rc = w.main_ts ? pending(py, &o, w.main_ts, script) : 0) < 0) {
		say(why, why_len, "cannot read process %d's interpreter: %s",
		    (int)py->pid, strerror(-rc));
		return rc;
	}
	/* the main thread took the request meanwhile: it runs the script
	 * now, and a request more would only run it again */
	if (w.main_ts && rc == 0)
		return 0;
	struct stopped st;
	if ((rc = stop_all(py->pid, &st)) < 0) {
		say(why, why_len, "cannot stop process %d's threads for the "
				  "writes: %s",
		    (int)py->pid, strerror(-rc));
		return rc;
	}
	rc = each_thread(py, &o, interp, spread_one, &w);
	resume_all(&st);
	if (rc < 0 && !w.n) {
		say(why, why_len, "cannot read process %d's threads: %s",
		    (int)py->pid, strerror(-rc));
		return rc;
	}
	return w.n;
}

static int withdraw_one(uint64_t ts, void *arg)
{
	struct exec_walk *w = arg;
	int32_t zero = 0;

	if (pending(w->py, w->o, ts, w->script) == 1 &&
	    remote_write(w->py->pid, ts + w->o->pending_call, &zero,
			 sizeof zero) == 0) {
		w->n++;
		if (ts == w->main_ts)
			w->main_pending = 1;
	}
	return 0;
}

int remote_exec_withdraw(const struct remote_py *py, const char *script,
			 int spread, int *main_pending)
{
	struct pyabi_remote_exec o;
	struct exec_walk w = { .py = py, .o = &o, .script = script };
	struct stopped st = { 0 };
	uint64_t interp;
	int rc = exec_layout(py, strlen(script), &o, &interp, NULL, 0);

	*main_pending = 0;
	if (rc < 0)
		return rc;
	if (remote_read(py->pid, interp + o.threads_main, &w.main_ts,
			sizeof w.main_ts) < 0)
		w.main_ts = 0;
	/* the other threads' states were written: stopped for the walk */
	if (spread && (rc = stop_all(py->pid, &st)) < 0)
		return rc;
	rc = each_thread(py, &o, interp, withdraw_one, &w);
	resume_all(&st);
	*main_pending = w.main_pending;
	return rc < 0 && !w.n ? rc : w.n;
}
