/*
 * outside_kids.c - `pyprof record --pid PID --subprocesses`: the
 * descendants of the process read from outside, each a process of its
 * own in the one profile (outside.h).
 *
 * A rescan of /proc (every OUTSIDE_KIDS_SCAN_NS, from outside_loop)
 * finds the processes whose parent chain leads to the root; each new one
 * that is CPython gets a sampler of its own (remote.h) and a part of the
 * profile (outside_prof_join); the others (a shell, `sleep`) are skipped
 * with a line at -v. Every tick then samples each one in turn, the page
 * cache switched to it first (remote_mem_open: one process at a time).
 *
 * A process is known by its pid and by what it runs (its executable and
 * command line): between fork and exec a child is a copy of its parent
 * (Python 2.7's subprocess runs Python code there), and an exec gives
 * the same pid another program, whose interpreter lies elsewhere. So a
 * new process is tried only when a second scan finds it unchanged, and a
 * change ends its part and starts it afresh. A process that exits keeps
 * what was read; one that outlives its parent (reparented, so no longer a
 * descendant) is sampled on until it exits.
 *
 * Single-threaded, in the pyprof process; a machine's few hundred
 * processes read at each scan.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/outside.h"
#include "common/grow.h"
#include "common/idhash.h"
#include "common/log.h"

/* A Python process that has not started its interpreter yet is tried
 * again at this many scans (a couple of seconds) before it is given up. */
#define KID_TRIES 20

enum kid_state { KID_PENDING,
		 KID_RETRY,
		 KID_SAMPLED,
		 KID_SKIPPED };

struct kid {
	pid_t pid;
	uint64_t ident; /* its executable and command line, hashed */
	enum kid_state state;
	int tries;
	int seen; /* found by the last scan */
	struct remote_sampler *s;
	struct outside_part *pt;
	uint64_t last_ns; /* its last tick */
};

struct outside_kids {
	pid_t root;
	int wall, max_depth;
	struct outside_prof *o;
	struct kid *v;
	size_t n, cap;
	pid_t *pids, *ppids; /* the scan's processes and their parents */
	size_t n_procs, cap_procs;
};

struct outside_kids *outside_kids_new(pid_t root, int wall, int max_depth,
				      struct outside_prof *o)
{
	struct outside_kids *k = calloc(1, sizeof *k);

	if (!k)
		return NULL;
	k->root = root;
	k->wall = wall;
	k->max_depth = max_depth;
	k->o = o;
	outside_prof_label_procs(o);
	return k;
}

static void kid_stop(struct kid *e)
{
	if (e->state == KID_SAMPLED) {
		outside_part_end(e->pt);
		remote_sampler_free(e->s);
	}
	e->s = NULL;
	e->pt = NULL;
	e->state = KID_SKIPPED;
}

void outside_kids_free(struct outside_kids *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].state == KID_SAMPLED)
			remote_sampler_free(k->v[i].s);
	free(k->v);
	free(k->pids);
	free(k->ppids);
	free(k);
}

/* pid's parent from /proc/PID/stat ("1234 (comm) S 1 ...": the comm may
 * hold spaces and parentheses, so the fields start after the last ')').
 * 0 when it cannot be read. */
static pid_t parent_of(const char *pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd, ppid = 0;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/* Every process and its parent into k->pids, k->ppids. 0 or -errno. */
static int list_procs(struct outside_kids *k)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return -errno;
	k->n_procs = 0;
	while ((de = readdir(d))) {
		pid_t ppid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		ppid = parent_of(de->d_name);
		if (!ppid)
			continue;
		if (k->n_procs == k->cap_procs) {
			size_t cap = k->cap_procs ? k->cap_procs * 2 : 512;
			pid_t *a = realloc(k->pids, cap * sizeof *a);
			pid_t *b = a ? realloc(k->ppids, cap * sizeof *b) : NULL;
			if (a)
				k->pids = a;
			if (!b)
				break;
			k->ppids = b;
			k->cap_procs = cap;
		}
		k->pids[k->n_procs] = (pid_t)atoi(de->d_name);
		k->ppids[k->n_procs++] = ppid;
	}
	closedir(d);
	return 0;
}

/* What pid runs: its executable's path and its command line, hashed (0
 * for a zombie: it has neither). */
static uint64_t ident_of(pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;
	uint64_t h;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof buf);
	if (n <= 0)
		return 0;
	h = idhash_bytes(buf, (size_t)n);
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf);
	close(fd);
	return n > 0 ? idhash_combine(h, idhash_bytes(buf, (size_t)n)) : 0;
}

static struct kid *kid_find(struct outside_kids *k, pid_t pid)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].pid == pid)
			return &k->v[i];
	return NULL;
}

static struct kid *kid_add(struct outside_kids *k, pid_t pid, uint64_t id)
{
	struct kid *e;

	if (grow_array(&k->v, &k->cap, k->n + 1, sizeof *k->v, 16) < 0)
		return NULL;
	e = &k->v[k->n++];
	memset(e, 0, sizeof *e);
	e->pid = pid;
	e->ident = id;
	e->state = KID_PENDING;
	return e;
}

/* Whether e's process is CPython with an interpreter to read: then it
 * gets a sampler and a part of the profile. */
static void kid_try(struct outside_kids *k, struct kid *e, uint64_t now_ns)
{
	struct remote_py py;
	char why[256] = "";

	if (remote_py_find(e->pid, &py, why, sizeof why) < 0) {
		log_debug("process %d is not Python, skipped: %s", (int)e->pid,
			  why);
		e->state = KID_SKIPPED;
		return;
	}
	e->s = remote_sampler_new(&py, k->wall, k->max_depth, why, sizeof why);
	if (!e->s) {
		e->state = ++e->tries < KID_TRIES ? KID_RETRY : KID_SKIPPED;
		if (e->state == KID_SKIPPED)
			log_debug("process %d cannot be read, skipped: %s",
				  (int)e->pid, why);
		return;
	}
	e->pt = outside_prof_join(k->o, &py);
	if (!e->pt) {
		log_warn("process %d: out of memory, not profiled",
			 (int)e->pid);
		remote_sampler_free(e->s);
		e->s = NULL;
		e->state = KID_SKIPPED;
		return;
	}
	outside_part_set_target(e->pt, remote_sampler_target(e->s));
	e->state = KID_SAMPLED;
	e->last_ns = now_ns;
	log_debug("process %d: Python %d.%d, profiled", (int)e->pid,
		  py.major, py.minor);
}

/* One descendant found by this scan: new, unchanged or exec'd since. */
static void kid_seen(struct outside_kids *k, pid_t pid, uint64_t now_ns)
{
	uint64_t id = ident_of(pid);
	struct kid *e = kid_find(k, pid);

	if (e && e->ident != id) {
		kid_stop(e);
		e->ident = id;
		e->state = KID_PENDING;
		e->tries = 0;
	} else if (!e) {
		e = kid_add(k, pid, id);
	} else if (e->state == KID_PENDING || e->state == KID_RETRY) {
		if (id)
			kid_try(k, e, now_ns);
	}
	if (e)
		e->seen = 1;
}

/* Whether pid's parent chain leads to the root: the scan's processes
 * marked in mark[] (1 a descendant, 2 not) as they are decided. */
static int descends(struct outside_kids *k, size_t i, unsigned char *mark)
{
	size_t chain = 0;
	size_t at = i;

	while (!mark[at] && chain++ < k->n_procs) {
		pid_t pp = k->ppids[at];
		size_t j;

		if (pp == k->root) {
			mark[at] = 1;
			break;
		}
		for (j = 0; j < k->n_procs && k->pids[j] != pp; j++)
			;
		if (j == k->n_procs || pp <= 1) {
			mark[at] = 2;
			break;
		}
		at = j;
	}
	return mark[at] == 1;
}

void outside_kids_scan(struct outside_kids *k, uint64_t now_ns)
{
	unsigned char *mark;
	size_t w = 0;

	if (list_procs(k) < 0)
		return;
	mark = calloc(k->n_procs ? k->n_procs : 1, 1);
	if (!mark)
		return;
	for (size_t i = 0; i < k->n; i++)
		k->v[i].seen = 0;
	for (size_t i = 0; i < k->n_procs; i++)
		if (k->pids[i] != k->root && descends(k, i, mark))
			kid_seen(k, k->pids[i], now_ns);
	free(mark);
	/* the ones gone from the tree are forgotten, but for a sampled one:
	 * reparented, it runs on until its tick finds it gone */
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].seen || k->v[i].state == KID_SAMPLED)
			k->v[w++] = k->v[i];
	k->n = w;
}

void outside_kids_tick(struct outside_kids *k, uint64_t now_ns)
{
	char why[256];

	for (size_t i = 0; i < k->n; i++) {
		struct kid *e = &k->v[i];
		int n;

		if (e->state != KID_SAMPLED)
			continue;
		remote_mem_open(e->pid);
		n = remote_sampler_tick(e->s, now_ns, now_ns - e->last_ns,
					outside_prof_add, e->pt, why,
					sizeof why);
		e->last_ns = now_ns;
		if (n == -ESRCH ||
		    (n < 0 && kill(e->pid, 0) < 0 && errno == ESRCH)) {
			log_debug("process %d exited", (int)e->pid);
			kid_stop(e);
		}
	}
}
