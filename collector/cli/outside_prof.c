/*
 * outside_prof.c - the profile of a process read from outside (see
 * outside.h): the sampler's stacks defined and added as a client's
 * session is (daemon/proc.h), then pprof_build's profile: one part per
 * process (the process asked for, and with --subprocesses each of its
 * descendants), sharing the symbols and the registry pprof_write reads.
 *
 * Definitions are made once each, per part: the session's ids are dense and new
 * ids must follow the last (proc_def_*), so this file keeps its own
 * tables of what it defined (a string by its bytes; a function by its
 * code object and fingerprint; a location by function and line; a node
 * by parent and location; a thread by its id), each an idhash over a
 * dense array of keys.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/outside.h"
#include "common/grow.h"
#include "common/fileio.h"
#include "common/idhash.h"
#include "common/log.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"

#define CMDLINE_MAX 4096
#define MAX_ARGS 64

/* A table of keys of four numbers, each with its id (its index + 1). */
struct ktab {
	uint64_t (*k)[4];
	size_t n, cap;
	struct idhash h;
};

struct kctx {
	const struct ktab *t;
	const uint64_t *k;
};

static int k_eq(const void *ctx, uint32_t id)
{
	const struct kctx *c = ctx;
	return !memcmp(c->t->k[id - 1], c->k, sizeof c->t->k[0]);
}

static uint64_t k_hash(const uint64_t *k)
{
	uint64_t h = idhash_mix(k[0]);
	for (int i = 1; i < 4; i++)
		h = idhash_combine(h, k[i]);
	return h;
}

/* The id of key k; *made 1 when it was added now. 0 without memory. */
static uint32_t ktab_get(struct ktab *t, uint64_t a, uint64_t b, uint64_t c,
			 uint64_t d, int *made)
{
	uint64_t k[4] = { a, b, c, d };
	struct kctx ctx = { t, k };
	uint64_t h = k_hash(k);
	uint32_t id = idhash_find(&t->h, h, k_eq, &ctx);

	*made = 0;
	if (id)
		return id;
	if (grow_array(&t->k, &t->cap, t->n + 1, sizeof t->k[0], 256) < 0)
		return 0;
	if (idhash_insert(&t->h, h, (uint32_t)t->n + 1) < 0)
		return 0;
	memcpy(t->k[t->n], k, sizeof k);
	*made = 1;
	return (uint32_t)++t->n;
}

static void ktab_free(struct ktab *t)
{
	free(t->k);
	idhash_fini(&t->h);
}

/* What one profile holds for all its processes: the symbols and the
 * registry pprof_write reads, the mode, and the processes' parts. */
struct outside_prof {
	struct symtab *st;
	struct procs *reg;
	int wall;
	uint64_t period_ns;
	int max_depth;
	int proc_labels;	     /* pprof_opts': a merged profile's labels */
	struct outside_part **parts; /* parts[0]: the process asked for */
	size_t n_parts, cap_parts;
};

/* One process of the profile: its session and what it has been given.
 * The session's ids are its own, so each process keeps its own tables. */
struct outside_part {
	struct outside_prof *o; /* the profile it is part of */
	struct proc_session *sess;
	struct remote_target *tg;
	int ended; /* its bye set when it was found gone */
	/* what the session has been given */
	struct ktab strs; /* (hash of the bytes, length, first id) */
	char **str_v;	  /* the strings, by id - 1 */
	struct ktab funcs, locs, nodes, threads;
	uint64_t n_strs;
	uint32_t pseudo_nopy, pseudo_unknown;
	uint64_t n_samples, n_lost;
	int failed; /* a definition was refused: log once */
};

static void def_failed(struct outside_part *pt, int rc, const char *err)
{
	if (!pt->failed)
		log_warn("the profile could not take a definition: %s",
			 rc == -ENOMEM ? "out of memory" : err);
	pt->failed = 1;
}

/* The session's id of string s, defined on first use; 0 on failure. */
static uint64_t def_str(struct outside_part *pt, const char *s)
{
	size_t len = strlen(s);
	uint64_t h = idhash_bytes(s, len);
	char err[ERR_LEN];
	int made, rc;
	uint32_t id;

	/* the bytes' hash and length as the key; equal keys of unequal
	 * strings are told apart by the stored text (a collision names
	 * the second one with the first's id: the key holds a counter) */
	for (uint64_t salt = 0; salt < 8; salt++) {
		id = ktab_get(&pt->strs, h, len, salt, 0, &made);
		if (!id)
			return 0;
		if (!made) {
			if (!strcmp(pt->str_v[id - 1], s))
				return id;
			continue;
		}
		char **nv = realloc(pt->str_v, pt->strs.cap * sizeof *nv);
		if (!nv)
			return 0;
		pt->str_v = nv;
		pt->str_v[id - 1] = strdup(s);
		if (!pt->str_v[id - 1])
			return 0;
		rc = proc_def_string(pt->sess, id, (const uint8_t *)s, len, err);
		if (rc < 0) {
			def_failed(pt, rc, err);
			return 0;
		}
		return id;
	}
	return 0;
}

/* A function's location at line, defined on first use: 0 on failure. */
static uint32_t def_loc(struct outside_part *pt, uint32_t func, int line)
{
	char err[ERR_LEN];
	int made, rc;
	uint32_t id = ktab_get(&pt->locs, func, (uint64_t)(int64_t)line, 0, 0,
			       &made);

	if (id && made &&
	    (rc = proc_def_location(pt->sess, id, func,
				    (uint64_t)(line < 0 ? 0 : line), err)) <
		    0) {
		def_failed(pt, rc, err);
		return 0;
	}
	return id;
}

/* A function named name (co_name sysname) in file from firstlineno, the
 * key its code object's (code, fp) or, for a pseudo-frame, 0 and a
 * number of its own. 0 on failure. */
static uint32_t def_func(struct outside_part *pt, uint64_t code, uint64_t fp,
			 const char *name, const char *sysname,
			 const char *file, int firstlineno)
{
	char err[ERR_LEN];
	int made, rc;
	uint32_t id = ktab_get(&pt->funcs, code, fp, 0, 0, &made);
	uint64_t sn, ss, sf;

	if (!id || !made)
		return id;
	sn = def_str(pt, name);
	ss = def_str(pt, sysname);
	sf = def_str(pt, file);
	if (!sn || !ss || !sf)
		return 0; /* the id stays taken: the session refuses it */
	rc = proc_def_function(pt->sess, id, sn, ss, sf,
			       (uint64_t)(firstlineno < 0 ? 0 : firstlineno),
			       err);
	if (rc < 0) {
		def_failed(pt, rc, err);
		return 0;
	}
	return id;
}

/* A pseudo-frame such as "[no Python frame]", as the library names
 * them (symbolize_pseudo: no file, line 0). */
static uint32_t pseudo_loc(struct outside_part *pt, uint32_t *cache,
			   uint64_t key, const char *name)
{
	if (!*cache) {
		uint32_t f = def_func(pt, 0, key, name, name, "", 0);
		*cache = f ? def_loc(pt, f, 0) : 0;
	}
	return *cache;
}

static uint32_t def_node(struct outside_part *pt, uint32_t parent,
			 uint32_t loc)
{
	char err[ERR_LEN];
	int made, rc;
	uint32_t id = ktab_get(&pt->nodes, parent, loc, 0, 0, &made);

	if (id && made &&
	    (rc = proc_def_node(pt->sess, id, parent, loc, err)) < 0) {
		def_failed(pt, rc, err);
		return 0;
	}
	return id;
}

static uint32_t def_thread(struct outside_part *pt, int64_t tid,
			   const char *name)
{
	char err[ERR_LEN];
	int made, rc;
	uint32_t id = ktab_get(&pt->threads, (uint64_t)tid, 0, 0, 0, &made);
	uint64_t sn;

	if (!id || !made)
		return id;
	sn = name && *name ? def_str(pt, name) : 0;
	rc = proc_def_thread(pt->sess, id, (uint64_t)tid, sn, err);
	if (rc < 0) {
		def_failed(pt, rc, err);
		return 0;
	}
	return id;
}

/* The stack's leaf node, the frames defined as needed; 0 on failure. */
static uint32_t stack_node(struct outside_part *pt,
			   const struct remote_sample *smp)
{
	uint32_t node = 0;

	if (!smp->n_frames)
		return def_node(pt, 0,
				pseudo_loc(pt, &pt->pseudo_nopy, 1,
					   "[no Python frame]"));
	/* frames are leaf first; the nodes grow from the root */
	for (int i = smp->n_frames - 1; i >= 0; i--) {
		const struct raw_frame *f = &smp->frames[i];
		const struct remote_named *e =
			remote_name_code(pt->tg, raw_code(f), f->fp);
		uint32_t loc, func;

		if (!e || !e->known) {
			loc = pseudo_loc(pt, &pt->pseudo_unknown, 2,
					 "[unknown]");
		} else {
			func = def_func(pt, e->code, e->fp, e->name,
					e->sysname, e->file, e->firstlineno);
			loc = func ? def_loc(pt, func,
					     remote_code_line(pt->tg, e,
							      f->offset))
				   : 0;
		}
		node = loc ? def_node(pt, node, loc) : 0;
		if (!node)
			return 0;
	}
	return node;
}

static void add_lost(struct outside_part *pt, unsigned reason, uint64_t ns)
{
	char err[ERR_LEN];

	if (proc_add_lost(pt->sess, reason, 1, ns, err) == 0)
		pt->n_lost++;
}

void outside_prof_add(void *arg, const struct remote_sample *smp)
{
	struct outside_part *pt = arg;
	char err[ERR_LEN];
	struct proc_sample rec = { 0 };
	uint64_t clock;
	uint32_t node, thread;

	if (smp->fault) {
		add_lost(pt, WIRE_LOST_FAULT, smp->value_ns);
		return;
	}
	if (smp->walk_flags & WALK_INVALID) {
		add_lost(pt, WIRE_LOST_INVALID, smp->value_ns);
		return;
	}
	node = stack_node(pt, smp);
	thread = node ? def_thread(pt, smp->tid, smp->thread_name) : 0;
	if (!thread) {
		add_lost(pt, WIRE_LOST_BUFFER, smp->value_ns);
		return;
	}
	rec.node = node;
	rec.thread = thread;
	rec.count = 1;
	rec.value = smp->value_ns;
	if (smp->walk_flags & WALK_TRUNCATED)
		rec.flags |= WIRE_SF_TRUNCATED;
	if (pt->o->wall && !smp->on_cpu)
		rec.flags |= WIRE_SF_OFF_CPU;
	if (smp->gil_known)
		rec.flags |= WIRE_SF_GIL_KNOWN | (smp->gil ? WIRE_SF_GIL : 0);
	clock = smp->t_mono_ns;
	if (proc_check_samples(pt->sess, &rec, 1, 0, err) < 0 ||
	    proc_add_samples(pt->sess, &clock, &rec, 1, err) < 0) {
		def_failed(pt, -EPROTO, err);
		return;
	}
	pt->n_samples++;
}

void outside_part_set_target(struct outside_part *pt,
			     struct remote_target *tg)
{
	pt->tg = tg;
}

static uint64_t clock_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The target's command line (NUL-separated) into buf; its argument
 * count, pointers into buf in args. */
static size_t read_cmdline(pid_t pid, char *buf, size_t cap,
			   struct proc_bytes *args, size_t max)
{
	char path[64];
	ssize_t len;
	size_t n = 0, at = 0;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, cap - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	while (at < (size_t)len && n < max) {
		size_t l = strlen(buf + at);
		args[n].p = (const uint8_t *)(buf + at);
		args[n].len = l;
		n++;
		at += l + 1;
	}
	return n;
}

/* The HELLO a process started with the library would have sent, from
 * its /proc files, into a session of o's registry. 0 or -1. */
static int part_open(struct outside_prof *o, struct outside_part *pt,
		     const struct remote_py *py)
{
	static char cmdline[CMDLINE_MAX];
	struct proc_bytes args[MAX_ARGS];
	struct proc_hello h = { 0 };
	char exe[REMOTE_PATH_MAX], comm[64] = "", ver[32], path[64];
	char err[ERR_LEN];
	ssize_t n;
	int resumed, fd;

	snprintf(path, sizeof path, "/proc/%d/exe", (int)py->pid);
	n = readlink(path, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/comm", (int)py->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, sizeof comm - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(fd);
	}
	snprintf(ver, sizeof ver, "%d.%d.%d", py->major, py->minor, py->micro);
	h.version = WIRE_VERSION;
	h.pid = (uint64_t)py->pid;
	h.uid = (uint64_t)getuid();
	h.start_unix_ns = clock_of(CLOCK_REALTIME);
	h.start_mono_ns = clock_of(CLOCK_MONOTONIC);
	h.has_start_unix = h.has_start_mono = 1;
	h.mode = o->wall ? WIRE_MODE_WALL : WIRE_MODE_CPU;
	h.period_ns = o->period_ns;
	h.max_depth = (uint64_t)o->max_depth;
	h.pyversion = (struct proc_bytes){ (const uint8_t *)ver, strlen(ver) };
	h.exe = (struct proc_bytes){ (const uint8_t *)exe, strlen(exe) };
	h.comm = (struct proc_bytes){ (const uint8_t *)comm, strlen(comm) };
	h.args = args;
	h.n_args = read_cmdline(py->pid, cmdline, sizeof cmdline, args,
				MAX_ARGS);
	return proc_session_open(o->reg, &h, &pt->sess, &resumed, err) < 0
		       ? -1
		       : 0;
}

static void part_free(struct outside_part *pt)
{
	if (pt->sess) {
		struct proc *p = proc_session_close(pt->sess);
		if (p)
			procs_remove(pt->o->reg, p);
	}
	for (size_t i = 0; i < pt->strs.n; i++)
		free(pt->str_v[i]);
	free(pt->str_v);
	ktab_free(&pt->strs);
	ktab_free(&pt->funcs);
	ktab_free(&pt->locs);
	ktab_free(&pt->nodes);
	ktab_free(&pt->threads);
	free(pt);
}

struct outside_part *outside_prof_join(struct outside_prof *o,
				       const struct remote_py *py)
{
	struct outside_part *pt;

	if (grow_array(&o->parts, &o->cap_parts, o->n_parts + 1,
		       sizeof *o->parts, 8) < 0)
		return NULL;
	pt = calloc(1, sizeof *pt);
	if (!pt)
		return NULL;
	pt->o = o;
	idhash_init(&pt->strs.h);
	idhash_init(&pt->funcs.h);
	idhash_init(&pt->locs.h);
	idhash_init(&pt->nodes.h);
	idhash_init(&pt->threads.h);
	if (part_open(o, pt, py) < 0) {
		part_free(pt);
		return NULL;
	}
	o->parts[o->n_parts++] = pt;
	return pt;
}

struct outside_part *outside_prof_first(struct outside_prof *o)
{
	return o->parts[0];
}

void outside_prof_label_procs(struct outside_prof *o)
{
	o->proc_labels = 1;
}

size_t outside_prof_n_parts(const struct outside_prof *o)
{
	return o->n_parts;
}

struct outside_prof *outside_prof_new(const struct remote_py *py, int wall,
				      uint64_t period_ns, int max_depth)
{
	struct outside_prof *o = calloc(1, sizeof *o);

	if (!o)
		return NULL;
	o->wall = wall;
	o->period_ns = period_ns;
	o->max_depth = max_depth;
	o->st = symtab_new();
	o->reg = o->st ? procs_new(o->st) : NULL;
	if (!o->reg || !outside_prof_join(o, py)) {
		outside_prof_free(o);
		return NULL;
	}
	return o;
}

void outside_prof_free(struct outside_prof *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n_parts; i++)
		part_free(o->parts[i]);
	free(o->parts);
	if (o->reg)
		procs_free(o->reg);
	if (o->st)
		symtab_free(o->st);
	free(o);
}

/* The process's end (or the window's) as its BYE would say it. */
static void part_bye(struct outside_part *pt)
{
	struct proc_bye bye = { 0 };

	bye.end_mono_ns = clock_of(CLOCK_MONOTONIC);
	bye.has_end_mono = 1;
	if (!pt->o->wall)
		bye.cpu_source = WIRE_CPU_OUTSIDE;
	proc_set_bye(pt->sess, &bye);
}

void outside_part_end(struct outside_part *pt)
{
	part_bye(pt);
	pt->ended = 1;
}

/* The window's profile, every part's: into path (atomically) if path,
 * else into *out (len bytes; the caller frees it). 0 or -errno; the
 * window starts again either way. */
static int prof_make(struct outside_prof *o, const char *path, void **out,
		     size_t *len, uint64_t *n_samples)
{
	const struct proc **list = calloc(o->n_parts, sizeof *list);
	struct pprof_opts po = { .proc_labels = o->proc_labels };
	struct pprof_stats stats;
	int rc;

	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < o->n_parts; i++) {
		if (!o->parts[i]->ended)
			part_bye(o->parts[i]);
		list[i] = proc_session_proc(o->parts[i]->sess);
	}
	memset(&stats, 0, sizeof stats);
	if (path)
		rc = pprof_write(o->st, list, o->n_parts, &po, path,
				 FILEIO_REPLACE, &stats);
	else
		rc = pprof_build(o->st, list, o->n_parts, &po, out, len,
				 &stats);
	if (n_samples)
		*n_samples = stats.samples;
	for (size_t i = 0; i < o->n_parts; i++)
		proc_window_reset(proc_session_proc(o->parts[i]->sess),
				  clock_of(CLOCK_REALTIME));
	free(list);
	return rc;
}

int outside_prof_write(struct outside_prof *o, const char *path,
		       uint64_t *n_samples)
{
	return prof_make(o, path, NULL, NULL, n_samples);
}

int outside_prof_build(struct outside_prof *o, void **out, size_t *len)
{
	return prof_make(o, NULL, out, len, NULL);
}
