/*
 * proc.c - per-process state and per-connection id maps (see proc.h).
 *
 * A session maps each kind of connection id to a collector-wide id with a
 * dense array (entry i is connection id i), so resolving a sample's node
 * and thread is two array reads. Definitions go through symtab.c, which
 * dedupes them across sessions and processes. A process's threads are
 * (tid, name) pairs interned in the process: a THREAD frame that renames a
 * ref points the ref at a new pair, so samples taken before the rename
 * keep the old name; a thread's first name (it had none: samples taken
 * before the library read it) is set in place, for its earlier samples
 * too.
 *
 * Every check happens before any state changes, so a rejected frame
 * leaves nothing behind (SAMPLES frames are checked whole by conn.c first,
 * see proc_check_samples).
 *
 * References into the symtab live in four places: a process's HELLO
 * strings and thread names, its aggregate's nodes, and its sessions' id
 * maps. Compaction (procs_compact) marks and renumbers exactly those; the
 * thread hash is keyed by tid alone so that renumbering a name does not
 * move its entry. Every id pushed anywhere also adds one to the
 * registry's reference bound (n_refs), which is how procs_maybe_compact
 * knows, without marking, that most of the table has become garbage.
 *
 * Runs on the collector's loop thread; proc_add_samples is on the hot
 * path (one call per batch of records).
 */
#include "daemon/proc.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/dlist.h"
#include "common/grow.h"
#include "daemon/agg.h"
#include "symbols/elfsym.h"
#include "daemon/heapagg.h"
#include "common/idhash.h"
#include "common/log.h"
#include "daemon/symtab.h"
#include "daemon/timeline.h"

/* A definition costs at least this many bytes of budget, so that empty
 * strings or millions of tiny definitions are still counted. */
#define PROC_DEF_COST 16

#define FLAGS_KNOWN                                                          \
	(WIRE_SF_TRUNCATED | WIRE_SF_OFF_CPU | WIRE_SF_GIL |                 \
	 WIRE_SF_GIL_KNOWN | WIRE_SF_NATIVE | WIRE_SF_NATIVE_KNOWN |         \
	 WIRE_SF_OPCODE)

/* Connection id -> collector-wide id; v[0] unused, v[1..n] defined. */
struct idmap {
	uint32_t *v;
	size_t n, cap;
};

struct proc_thread {
	uint64_t tid;
	uint32_t name_sid;
};

struct proc {
	struct procs *reg;
	struct proc *prev, *next; /* registry list, in connect order; of a
				     copy (window.c), reg->copies */
	int is_copy;              /* made by proc_copy_new */
	struct proc_info info;
	struct agg *agg;
	struct proc_thread *threads; /* [1..n_threads] */
	uint32_t n_threads;
	size_t threads_cap;
	struct idhash thread_hash;
	struct proc_session *sessions; /* its open connections */
	uint64_t lost_samples[PROC_LOST_MAX + 1]; /* in the window */
	uint64_t lost_value[PROC_LOST_MAX + 1];
	uint64_t cum_lost_buffer; /* WIRE_LOST_BUFFER, never reset */
	uint64_t cum_lost_away;   /* PROC_LOST_AWAY, never reset */
	uint64_t n_refs;          /* its share of procs.n_refs */
	uint64_t closed_refs;     /* the largest closed session's n_refs */
	uint64_t max_mono_ns; /* latest sample time seen, 0 if none */
	uint64_t heard_unix_ns; /* collector's clock at the last frame */
	unsigned n_sessions;
	struct heapagg *heap;   /* NULL until its first HEAP frame */
	uint64_t snap_seq;      /* a snapshot asked for, not written; 0 */
	uint64_t n_written;     /* of info.n_samples, those in a written
				   profile (proc_mark_written) */
	uint64_t n_acked;       /* of those, acknowledged to the library */
	uint64_t tomb_unacked;  /* of info.written_before, what we wrote for
				   its earlier object, unacknowledged */
	uint64_t snap_last_ns;  /* CLOCK_MONOTONIC of the last one taken */
	uint64_t n_snap_skipped; /* too soon after the last, or no heap */
};

struct proc_session {
	struct proc *proc;
	struct proc_session *prev, *next; /* the process's sessions */
	struct idmap strings, functions, locations, nodes, threads;
	struct idmap mappings; /* PYPROF_NATIVE's MAPPING frames */
	uint64_t def_bytes;
	uint64_t n_samples, n_lost;
	uint64_t n_refs; /* ids pushed into its maps */
	void *owner;     /* its connection, for the written hook */
	uint64_t n_to_ack, n_acked; /* of n_samples: written; acknowledged */
};

/* What the registry wrote of a process it forgot, and had not
 * acknowledged: if the process comes back (a reconnection after its
 * program closed our socket), that is not lost. */
struct tomb {
	uint64_t pid, start_unix_ns, unacked;
};

struct procs {
	struct symtab *st;
	struct elfsym *es; /* native names; NULL: addresses only */
	struct proc *head, *tail;
	size_t n;
	uint64_t n_seen, total_samples, total_lost;
	uint64_t n_refs;  /* bound on symtab entries processes refer to */
	uint64_t gc_kept; /* entries the last compaction kept */
	uint64_t n_snap_pending; /* processes with snap_seq set */
	struct timeline *timeline; /* NULL unless --timeline */
	struct proc *copies;       /* copies (window.c), a list */
	size_t n_copies;
	struct procs_tap tap;      /* all NULL: none */
	struct tomb tombs[PROCS_TOMBS]; /* a ring; pid 0: empty */
	unsigned n_tombs;
	void (*written_fn)(void *arg, void *owner);
	void *written_arg;
	uint64_t n_refused;        /* HELLOs with WIRE_H_REFUSED */
	size_t n_refused_kinds;
	struct {
		uint64_t n;
		char why[PROCS_REFUSED_LEN];
	} refused[PROCS_REFUSED_KINDS + 1]; /* + "other reasons" */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- id maps ------------------------------------------------------------ */

static void idmap_fini(struct idmap *m)
{
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

static int idmap_push(struct idmap *m, uint32_t gid)
{
	/* ids start at 1: v[0] is unused */
	uint32_t *v = grow_array(m->v, &m->cap, m->n + 2, sizeof(*v), 256);
	if (!v)
		return -ENOMEM;
	m->v = v;
	m->v[++m->n] = gid;
	return 0;
}

static int idmap_has(const struct idmap *m, uint64_t id)
{
	return id >= 1 && id <= m->n;
}

/* A new definition must take the next id. */
static int check_new_id(const struct idmap *m, uint64_t id, const char *kind,
			char *err)
{
	if (id > WIRE_MAX_IDS) {
		snprintf(err, PROC_ERR_LEN, "%s id %" PRIu64
			 " over the limit of %u ids", kind, id, WIRE_MAX_IDS);
		return -EPROTO;
	}
	if (id != m->n + 1) {
		snprintf(err, PROC_ERR_LEN, "%s id %" PRIu64
			 " out of order (expected %zu)", kind, id, m->n + 1);
		return -EPROTO;
	}
	return 0;
}

/* Every id stored in a process or session counts towards the bound. */
static void add_refs(struct proc *p, uint64_t n)
{
	p->n_refs += n;
	p->reg->n_refs += n;
}

/* idmap_push for a session's map, counting the reference. */
static int session_push(struct proc_session *s, struct idmap *m, uint32_t gid)
{
	if (idmap_push(m, gid) < 0)
		return -ENOMEM;
	add_refs(s->proc, 1);
	s->n_refs++;
	return 0;
}

/* A session's maps are gone, but the aggregate may still name what they
 * mapped. A reconnecting client replays its definitions (wire.h), so each
 * session defines at least what the one before it did: the largest closed
 * session bounds them all, and a process that reconnects often does not
 * inflate the bound (which would only make compaction lazier). */
static void session_refs_closed(struct proc_session *s)
{
	struct proc *p = s->proc;
	p->n_refs -= s->n_refs;
	p->reg->n_refs -= s->n_refs;
	if (s->n_refs > p->closed_refs) {
		add_refs(p, s->n_refs - p->closed_refs);
		p->closed_refs = s->n_refs;
	}
}

static int charge(struct proc_session *s, size_t bytes, char *err)
{
	uint64_t cost = (uint64_t)bytes + PROC_DEF_COST;
	if (s->def_bytes + cost > PROC_MAX_DEF_BYTES) {
		snprintf(err, PROC_ERR_LEN,
			 "definitions exceed the limit of %u MiB",
			 PROC_MAX_DEF_BYTES >> 20);
		return -EPROTO;
	}
	s->def_bytes += cost;
	return 0;
}

static int oom(char *err)
{
	snprintf(err, PROC_ERR_LEN, "out of memory");
	return -ENOMEM;
}

/* ---- registry ----------------------------------------------------------- */

struct procs *procs_new(struct symtab *st)
{
	struct procs *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return NULL;
	reg->st = st;
	reg->es = elfsym_new(); /* NULL: native frames stay addresses */
	return reg;
}

static void proc_free(struct proc *p)
{
	p->reg->n_refs -= p->n_refs;
	if (p->snap_seq)
		p->reg->n_snap_pending--;
	heapagg_free(p->heap);
	agg_free(p->agg);
	free(p->threads);
	idhash_fini(&p->thread_hash);
	free(p->info.arg_sids);
	free(p);
}

void procs_free(struct procs *reg)
{
	if (!reg)
		return;
	struct proc *p = reg->head;
	while (p) {
		struct proc *next = p->next;
		assert(p->n_sessions == 0);
		proc_free(p);
		p = next;
	}
	while (reg->copies)
		proc_copy_free(reg->copies);
	elfsym_free(reg->es);
	free(reg);
}

struct proc *procs_first(const struct procs *reg)
{
	return reg->head;
}

struct proc *proc_next(const struct proc *p)
{
	return p->next;
}

size_t procs_len(const struct procs *reg)
{
	return reg->n;
}

uint64_t procs_n_seen(const struct procs *reg)
{
	return reg->n_seen;
}

uint64_t procs_total_samples(const struct procs *reg)
{
	return reg->total_samples;
}

uint64_t procs_total_lost(const struct procs *reg)
{
	return reg->total_lost;
}

void procs_note_refused(struct procs *reg, const char *why)
{
	size_t i;

	reg->n_refused++;
	for (i = 0; i < reg->n_refused_kinds; i++)
		if (strncmp(reg->refused[i].why, why, PROCS_REFUSED_LEN - 1) == 0)
			break;
	if (i == reg->n_refused_kinds) {
		if (i == PROCS_REFUSED_KINDS) {
			i = PROCS_REFUSED_KINDS; /* the "other reasons" slot */
			snprintf(reg->refused[i].why, PROCS_REFUSED_LEN,
				 "other reasons");
		} else {
			snprintf(reg->refused[i].why, PROCS_REFUSED_LEN,
				 "%s", why);
			reg->n_refused_kinds++;
		}
	}
	reg->refused[i].n++;
}

uint64_t procs_n_refused(const struct procs *reg)
{
	return reg->n_refused;
}

const char *procs_refused_reason(const struct procs *reg, size_t i,
				 uint64_t *n)
{
	if (i == reg->n_refused_kinds && reg->refused[PROCS_REFUSED_KINDS].n)
		i = PROCS_REFUSED_KINDS;
	else if (i >= reg->n_refused_kinds)
		return NULL;
	*n = reg->refused[i].n;
	return reg->refused[i].why;
}

void procs_remove(struct procs *reg, struct proc *p)
{
	uint64_t unacked = p->tomb_unacked + (p->n_written - p->n_acked);
	if (unacked) {
		struct tomb t = { p->info.pid, p->info.start_unix_ns,
				  unacked };
		unsigned i;
		for (i = 0; i < PROCS_TOMBS; i++)
			if (reg->tombs[i].pid == t.pid &&
			    reg->tombs[i].start_unix_ns == t.start_unix_ns)
				break;
		reg->tombs[i < PROCS_TOMBS ? i
					   : reg->n_tombs++ % PROCS_TOMBS] = t;
	}
	assert(p->n_sessions == 0 && p->reg == reg);
	DLIST_UNLINK_T(reg->head, reg->tail, p);
	reg->n--;
	if (reg->tap.gone)
		reg->tap.gone(reg->tap.arg, p);
	proc_free(p);
	/* Copies may outlive every process and still name symbols. */
	if (reg->n == 0 && reg->n_copies == 0) {
		assert(reg->n_refs == 0);
		symtab_clear(reg->st);
		reg->gc_kept = 0;
	}
}

/* Copies HELLO's facts into a new process. */
static int proc_create(struct procs *reg, const struct proc_hello *h,
		       struct proc **out)
{
	struct symtab *st = reg->st;
	struct proc *p = calloc(1, sizeof(*p));
	int err = -ENOMEM;

	if (!p)
		goto out;
	idhash_init(&p->thread_hash);
	p->reg = reg;
	p->agg = agg_new();
	if (!p->agg)
		goto out;
	p->info.pid = h->pid;
	p->info.ppid = h->ppid;
	p->info.uid = h->uid;
	p->info.start_unix_ns =
		h->has_start_unix ? h->start_unix_ns : now_unix_ns();
	p->info.start_mono_ns = h->start_mono_ns;
	p->info.has_start_mono = h->has_start_mono;
	p->info.mode = (unsigned)h->mode;
	p->info.period_ns = h->period_ns;
	p->info.achieved_ns = h->achieved_ns;
	p->info.max_depth = h->max_depth;
	/* A reconnection is the first we hear of it: another collector had
	 * its earlier data, and our window starts now. */
	p->info.joined_late = h->conn_seq > 0;
	p->info.win_start_unix_ns = p->info.joined_late
					    ? now_unix_ns()
					    : p->info.start_unix_ns;
	p->info.written_before = h->has_written ? h->written : 0;
	for (unsigned i = 0; h->conn_seq && h->has_start_unix &&
			     i < PROCS_TOMBS; i++) {
		struct tomb *t = &reg->tombs[i];
		if (t->pid != h->pid || t->start_unix_ns != h->start_unix_ns)
			continue;
		p->tomb_unacked = t->unacked;
		p->info.written_before = sat_add(p->info.written_before,
						 t->unacked);
		*t = (struct tomb){ 0 };
		break;
	}
	add_refs(p, 3);
	if ((err = symtab_intern_string(st, h->exe.p, h->exe.len,
					&p->info.exe_sid)) < 0 ||
	    (err = symtab_intern_string(st, h->comm.p, h->comm.len,
					&p->info.comm_sid)) < 0 ||
	    (err = symtab_intern_string(st, h->pyversion.p, h->pyversion.len,
					&p->info.pyversion_sid)) < 0)
		goto out;
	if (h->n_args) {
		err = -ENOMEM;
		p->info.arg_sids = calloc(h->n_args, sizeof(uint32_t));
		if (!p->info.arg_sids)
			goto out;
		for (size_t i = 0; i < h->n_args; i++) {
			err = symtab_intern_string(st, h->args[i].p,
						   h->args[i].len,
						   &p->info.arg_sids[i]);
			if (err < 0)
				goto out;
		}
		p->info.n_args = h->n_args;
		add_refs(p, h->n_args);
	}
	p->heard_unix_ns = now_unix_ns();
	err = 0;
out:
	if (err && p) {
		proc_free(p);
		p = NULL;
	}
	*out = p;
	return err;
}

static struct proc *proc_find(const struct procs *reg,
			      const struct proc_hello *h)
{
	if (!h->has_start_unix)
		return NULL; /* no reliable identity to resume on */
	for (struct proc *p = reg->head; p; p = p->next)
		if (p->info.pid == h->pid &&
		    p->info.start_unix_ns == h->start_unix_ns)
			return p;
	return NULL;
}

int proc_session_open(struct procs *reg, const struct proc_hello *h,
		      struct proc_session **out, int *resumed, char *err)
{
	struct proc_session *s = calloc(1, sizeof(*s));
	struct proc *p;
	int rc;

	*out = NULL;
	*resumed = 0;
	if (!s)
		return oom(err);
	p = proc_find(reg, h);
	if (p) {
		*resumed = 1;
	} else {
		rc = proc_create(reg, h, &p);
		if (rc < 0) {
			free(s);
			return oom(err);
		}
		DLIST_APPEND_T(reg->head, reg->tail, p);
		reg->n++;
		reg->n_seen++;
	}
	p->n_sessions++;
	p->info.n_connects++;
	s->proc = p;
	DLIST_PUSH(p->sessions, s);
	*out = s;
	return 0;
}

struct proc *proc_session_close(struct proc_session *s)
{
	struct proc *p;
	if (!s)
		return NULL;
	p = s->proc;
	DLIST_UNLINK(p->sessions, s);
	session_refs_closed(s);
	idmap_fini(&s->strings);
	idmap_fini(&s->functions);
	idmap_fini(&s->locations);
	idmap_fini(&s->nodes);
	idmap_fini(&s->threads);
	idmap_fini(&s->mappings);
	free(s);
	assert(p->n_sessions > 0);
	return --p->n_sessions == 0 ? p : NULL;
}

struct proc *proc_session_proc(const struct proc_session *s)
{
	return s->proc;
}

uint64_t proc_session_samples(const struct proc_session *s)
{
	return s->n_samples;
}

uint64_t proc_session_lost(const struct proc_session *s)
{
	return s->n_lost;
}

/* ---- definitions -------------------------------------------------------- */

int proc_def_string(struct proc_session *s, uint64_t id, const uint8_t *p,
		    size_t len, char *err)
{
	uint32_t sid;
	int rc;

	if ((rc = check_new_id(&s->strings, id, "STRING", err)) < 0 ||
	    (rc = charge(s, len, err)) < 0)
		return rc;
	if (symtab_intern_string(s->proc->reg->st, p, len, &sid) < 0 ||
	    session_push(s, &s->strings, sid) < 0)
		return oom(err);
	return 0;
}

static int check_ref(const struct idmap *m, uint64_t ref, const char *kind,
		     uint64_t id, const char *field, const char *what,
		     char *err)
{
	if (idmap_has(m, ref))
		return 0;
	snprintf(err, PROC_ERR_LEN, "%s %" PRIu64 ": %s %" PRIu64
		 " is not a defined %s", kind, id, field, ref, what);
	return -EPROTO;
}

static int check_line(uint64_t line, const char *kind, uint64_t id,
		      const char *field, char *err)
{
	if (line <= INT32_MAX)
		return 0;
	snprintf(err, PROC_ERR_LEN, "%s %" PRIu64 ": %s %" PRIu64
		 " is out of range", kind, id, field, line);
	return -EPROTO;
}

int proc_def_function(struct proc_session *s, uint64_t id, uint64_t name,
		      uint64_t system_name, uint64_t filename,
		      uint64_t start_line, char *err)
{
	const struct idmap *str = &s->strings;
	uint32_t fid;
	int rc;

	if ((rc = check_new_id(&s->functions, id, "FUNCTION", err)) < 0 ||
	    (rc = check_ref(str, name, "FUNCTION", id, "name", "string",
			    err)) < 0 ||
	    (rc = check_ref(str, system_name, "FUNCTION", id, "system_name",
			    "string", err)) < 0 ||
	    (rc = check_ref(str, filename, "FUNCTION", id, "filename",
			    "string", err)) < 0 ||
	    (rc = check_line(start_line, "FUNCTION", id, "start_line",
			     err)) < 0 ||
	    (rc = charge(s, 0, err)) < 0)
		return rc;
	if (symtab_intern_function(s->proc->reg->st, str->v[name],
				   str->v[system_name], str->v[filename],
				   (int64_t)start_line, &fid) < 0 ||
	    session_push(s, &s->functions, fid) < 0)
		return oom(err);
	return 0;
}

int proc_def_location(struct proc_session *s, uint64_t id, uint64_t function,
		      uint64_t line, char *err)
{
	uint32_t lid;
	int rc;

	if ((rc = check_new_id(&s->locations, id, "LOCATION", err)) < 0 ||
	    (rc = check_ref(&s->functions, function, "LOCATION", id,
			    "function", "function", err)) < 0 ||
	    (rc = check_line(line, "LOCATION", id, "line", err)) < 0 ||
	    (rc = charge(s, 0, err)) < 0)
		return rc;
	if (symtab_intern_location(s->proc->reg->st,
				   s->functions.v[function], (int64_t)line,
				   &lid) < 0 ||
	    session_push(s, &s->locations, lid) < 0)
		return oom(err);
	return 0;
}

int proc_def_mapping(struct proc_session *s, uint64_t id, uint64_t start,
		     uint64_t limit, uint64_t offset, uint64_t filename,
		     const uint8_t *build_id, size_t build_id_len, char *err)
{
	struct symtab *st = s->proc->reg->st;
	struct symtab_mapping m = { 0 };
	char hex[2 * WIRE_MAX_BUILD_ID + 1];
	uint32_t mid;
	int rc;

	if ((rc = check_new_id(&s->mappings, id, "MAPPING", err)) < 0 ||
	    (rc = check_ref(&s->strings, filename, "MAPPING", id, "filename",
			    "string", err)) < 0)
		return rc;
	if (start >= limit || build_id_len > WIRE_MAX_BUILD_ID) {
		snprintf(err, PROC_ERR_LEN, "MAPPING %" PRIu64 ": %s", id,
			 start >= limit ? "start is not below limit"
					: "build id too long");
		return -EPROTO;
	}
	if ((rc = charge(s, build_id_len, err)) < 0)
		return rc;
	for (size_t i = 0; i < build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	hex[2 * build_id_len] = 0;
	m.start = start;
	m.limit = limit;
	m.offset = offset;
	m.file = s->strings.v[filename];
	if (symtab_intern_string(st, hex, 2 * build_id_len, &m.build_id) < 0 ||
	    symtab_intern_mapping(st, &m, &mid) < 0 ||
	    session_push(s, &s->mappings, mid) < 0)
		return oom(err);
	return 0;
}

/* The build id of mapping m, from its hex string, into id; its length. */
static size_t mapping_build_id(const struct symtab *st,
			       const struct symtab_mapping *m, uint8_t *id)
{
	const char *hex = symtab_string(st, m->build_id);
	size_t n = strlen(hex) / 2;
	for (size_t i = 0; i < n && i < WIRE_MAX_BUILD_ID; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return 0;
		id[i] = (uint8_t)v;
	}
	return n <= WIRE_MAX_BUILD_ID ? n : 0;
}

/* Names address addr of mapping mid from the mapped file (elfsym.h):
 * *fid and *line, or 0 and 0 when nothing names it. */
static int name_address(struct procs *reg, uint32_t mid, uint64_t addr,
			uint32_t *fid, int64_t *line)
{
	struct symtab *st = reg->st;
	struct symtab_mapping m;
	struct elfsym_hit hit;
	uint8_t id[WIRE_MAX_BUILD_ID];
	char path[4096];
	uint32_t name, file = 0;

	*fid = 0;
	*line = 0;
	if (!mid || !reg->es)
		return 0;
	symtab_mapping(st, mid, &m);
	snprintf(path, sizeof(path), "%s", symtab_string(st, m.file));
	size_t id_len = mapping_build_id(st, &m, id);
	if (!elfsym_lookup(reg->es, path, id, id_len, m.start, m.offset, addr,
			   &hit))
		return 0;
	/* The line only when it is in the function's own file: an address
	 * inlined from a header has a line of that header. */
	const char *fn_file = hit.func_file;
	uint32_t fn_line = hit.func_line;
	if (symtab_intern_string(st, hit.name, strlen(hit.name), &name) < 0 ||
	    (fn_file && symtab_intern_string(st, fn_file, strlen(fn_file),
					     &file) < 0) ||
	    symtab_intern_function(st, name, name, file, fn_line, fid) < 0)
		return -ENOMEM;
	if (fn_file && hit.src_file == fn_file)
		*line = hit.src_line;
	/* a synthetic "file+0x..." name leaves the mapping without
	 * has_functions: pprof may still find a real name */
	m.flags = (hit.synthetic ? 0 : SYMTAB_MAP_FUNCTIONS) |
		  (*line ? SYMTAB_MAP_LINES : 0);
	return symtab_intern_mapping(st, &m, &mid);
}

int proc_def_address(struct proc_session *s, uint64_t id, uint64_t mapping,
		     uint64_t addr, char *err)
{
	struct symtab *st = s->proc->reg->st;
	uint32_t mid = 0, fid, lid;
	int64_t line;
	int rc;

	if ((rc = check_new_id(&s->locations, id, "ADDRESS", err)) < 0 ||
	    (mapping && (rc = check_ref(&s->mappings, mapping, "ADDRESS", id,
					"mapping", "mapping", err)) < 0))
		return rc;
	/* Address 0 is never code, and with mapping 0 it would be an
	 * ADDRESS naming nothing: neither a function and line nor a place
	 * in a mapping (the symtab would take it for a Python location
	 * without a function). */
	if (addr == 0) {
		snprintf(err, PROC_ERR_LEN, "ADDRESS %" PRIu64 ": address 0",
			 id);
		return -EPROTO;
	}
	if (mapping) {
		struct symtab_mapping m;
		mid = s->mappings.v[mapping];
		symtab_mapping(st, mid, &m);
		if (addr < m.start || addr >= m.limit) {
			snprintf(err, PROC_ERR_LEN, "ADDRESS %" PRIu64
				 ": %#" PRIx64 " is outside mapping %" PRIu64,
				 id, addr, mapping);
			return -EPROTO;
		}
	}
	if ((rc = charge(s, 0, err)) < 0)
		return rc;
	if (name_address(s->proc->reg, mid, addr, &fid, &line) < 0 ||
	    symtab_intern_native_location(st, fid, line, mid, addr, &lid) < 0 ||
	    session_push(s, &s->locations, lid) < 0)
		return oom(err);
	return 0;
}

int proc_def_node(struct proc_session *s, uint64_t id, uint64_t parent,
		  uint64_t location, char *err)
{
	struct symtab *st = s->proc->reg->st;
	uint32_t gparent, nid;
	int rc;

	if ((rc = check_new_id(&s->nodes, id, "NODE", err)) < 0)
		return rc;
	/* Parents must already be defined, which also rules out a node
	 * being its own ancestor: the trie cannot have a cycle. */
	if (parent != 0 && (rc = check_ref(&s->nodes, parent, "NODE", id,
					   "parent", "node", err)) < 0)
		return rc;
	if ((rc = check_ref(&s->locations, location, "NODE", id, "location",
			    "location", err)) < 0)
		return rc;
	gparent = parent ? s->nodes.v[parent] : 0;
	if (symtab_node_depth(st, gparent) + 1 > WIRE_MAX_DEPTH) {
		snprintf(err, PROC_ERR_LEN, "NODE %" PRIu64
			 ": stack deeper than %u frames", id, WIRE_MAX_DEPTH);
		return -EPROTO;
	}
	if ((rc = charge(s, 0, err)) < 0)
		return rc;
	if (symtab_intern_node(st, gparent, s->locations.v[location], &nid) <
		    0 ||
	    session_push(s, &s->nodes, nid) < 0)
		return oom(err);
	return 0;
}

struct thread_key {
	const struct proc *p;
	uint64_t tid;
	uint32_t name_sid;
};

static int thread_eq(const void *ctx, uint32_t idx)
{
	const struct thread_key *k = ctx;
	const struct proc_thread *t = &k->p->threads[idx];
	return t->tid == k->tid && t->name_sid == k->name_sid;
}

/* The process's thread number for (tid, name), added if new. Hashed by
 * tid alone: a compaction renumbers names without touching the hash, and a
 * tid has only as many names as renames. */
static int proc_thread_intern(struct proc *p, uint64_t tid, uint32_t name_sid,
			      uint32_t *idx)
{
	struct thread_key key = { p, tid, name_sid };
	uint64_t h = idhash_mix(tid);
	uint32_t i = idhash_find(&p->thread_hash, h, thread_eq, &key);
	if (i) {
		*idx = i;
		return 0;
	}
	struct proc_thread *t = grow_array(p->threads, &p->threads_cap,
					   (size_t)p->n_threads + 2,
					   sizeof(*t), 16);
	if (!t)
		return -ENOMEM;
	p->threads = t;
	i = p->n_threads + 1;
	if (idhash_insert(&p->thread_hash, h, i) < 0)
		return -ENOMEM;
	p->threads[i] = (struct proc_thread){ tid, name_sid };
	p->n_threads = i;
	add_refs(p, 1);
	*idx = i;
	return 0;
}

/* A thread's first name, read after its first samples were taken: it
 * names those samples too (a rename does not). In place, unless the pair
 * (tid, name) exists already. 1 if done. */
static int name_first(struct proc *p, uint32_t idx, uint64_t tid,
		      uint32_t name_sid)
{
	struct proc_thread *t = &p->threads[idx];
	struct thread_key key = { p, tid, name_sid };
	if (t->tid != tid || t->name_sid != 0 ||
	    idhash_find(&p->thread_hash, idhash_mix(tid), thread_eq, &key))
		return 0;
	t->name_sid = name_sid;
	add_refs(p, 1);
	return 1;
}

int proc_def_thread(struct proc_session *s, uint64_t ref, uint64_t tid,
		    uint64_t name, char *err)
{
	uint32_t idx;
	int rc;

	/* A ref is either the next one (a new thread) or an existing one
	 * (a rename). */
	if (!idmap_has(&s->threads, ref) &&
	    (rc = check_new_id(&s->threads, ref, "THREAD", err)) < 0)
		return rc;
	if (tid == 0 || tid > INT32_MAX) {
		snprintf(err, PROC_ERR_LEN, "THREAD %" PRIu64
			 ": tid %" PRIu64 " is out of range", ref, tid);
		return -EPROTO;
	}
	if (name != 0 && (rc = check_ref(&s->strings, name, "THREAD", ref,
					 "name", "string", err)) < 0)
		return rc;
	if ((rc = charge(s, 0, err)) < 0)
		return rc;
	uint32_t name_sid = name ? s->strings.v[name] : 0;
	if (ref <= s->threads.n && name_sid &&
	    name_first(s->proc, s->threads.v[ref], tid, name_sid))
		return 0;
	if (proc_thread_intern(s->proc, tid, name_sid, &idx) < 0)
		return oom(err);
	if (ref <= s->threads.n) {
		s->threads.v[ref] = idx;
		return 0;
	}
	if (session_push(s, &s->threads, idx) < 0)
		return oom(err);
	return 0;
}

/* ---- data --------------------------------------------------------------- */

int proc_check_samples(const struct proc_session *s,
		       const struct proc_sample *recs, size_t n,
		       uint64_t first_index, char *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct proc_sample *r = &recs[i];
		const char *why;
		if (r->node - 1 >= s->nodes.n) /* also catches node 0 */
			why = "node is not a defined node";
		else if (r->thread - 1 >= s->threads.n)
			why = "thread is not a defined thread ref";
		else if (r->flags & ~(uint64_t)FLAGS_KNOWN)
			why = "unknown flag bits";
		else if (r->count > INT64_MAX || r->value > INT64_MAX)
			why = "count or value out of range";
		else if (r->opcode > 255)
			why = "opcode is not a byte";
		else
			continue;
		snprintf(err, PROC_ERR_LEN,
			 "SAMPLES record %" PRIu64 " (node %" PRIu64
			 ", thread %" PRIu64 ", flags %#" PRIx64 "): %s",
			 first_index + i, r->node, r->thread, r->flags, why);
		return -EPROTO;
	}
	return 0;
}

/* Flags as they key the aggregate: bits that carry no information are
 * cleared, so they do not split one stack into several keys. */
static uint32_t norm_flags(uint64_t f, unsigned mode)
{
	if (!(f & WIRE_SF_GIL_KNOWN))
		f &= ~(uint64_t)WIRE_SF_GIL;
	if (!(f & WIRE_SF_NATIVE_KNOWN))
		f &= ~(uint64_t)WIRE_SF_NATIVE;
	if (mode != WIRE_MODE_WALL)
		f &= ~(uint64_t)WIRE_SF_OFF_CPU;
	return (uint32_t)f;
}

/* A sample's time in Unix ns, from its CLOCK_MONOTONIC time and HELLO's
 * pair of clocks (the collector's clock when HELLO had none). */
static uint64_t sample_unix_ns(const struct proc *p, uint64_t mono_ns)
{
	const struct proc_info *in = &p->info;
	if (!in->has_start_mono)
		return now_unix_ns();
	if (mono_ns >= in->start_mono_ns)
		return sat_add(in->start_unix_ns, mono_ns - in->start_mono_ns);
	return in->start_unix_ns - (in->start_mono_ns - mono_ns);
}

int proc_add_samples(struct proc_session *s, uint64_t *clock_ns,
		     const struct proc_sample *recs, size_t n, char *err)
{
	struct proc *p = s->proc;
	const uint32_t *nodes = s->nodes.v, *threads = s->threads.v;
	unsigned mode = p->info.mode;
	uint64_t count = 0, t = *clock_ns;

	for (size_t i = 0; i < n; i++) {
		const struct proc_sample *r = &recs[i];
		assert(r->node - 1 < s->nodes.n &&
		       r->thread - 1 < s->threads.n);
		uint32_t flags = agg_key_flags(norm_flags(r->flags, mode),
					       (unsigned)r->opcode);
		if (agg_add(p->agg, nodes[r->node], threads[r->thread], flags,
			    r->count, r->value) < 0)
			return oom(err);
		count = sat_add(count, r->count);
		t = sat_add(t, r->dt_ns);
		if (p->reg->tap.sample)
			p->reg->tap.sample(p->reg->tap.arg, p, nodes[r->node],
					   threads[r->thread], flags,
					   r->count, r->value, t);
		if (p->reg->timeline)
			timeline_add(p->reg->timeline, nodes[r->node],
				     p->info.pid,
				     p->threads[threads[r->thread]].tid,
				     sample_unix_ns(p, t), flags, r->count,
				     r->value);
	}
	*clock_ns = t;
	if (n > 0 && t > p->max_mono_ns)
		p->max_mono_ns = t;
	s->n_samples = sat_add(s->n_samples, count);
	p->info.n_samples = sat_add(p->info.n_samples, count);
	p->info.win_samples = sat_add(p->info.win_samples, count);
	p->reg->total_samples = sat_add(p->reg->total_samples, count);
	p->heard_unix_ns = now_unix_ns();
	return 0;
}

static void count_lost(struct proc *p, unsigned reason, uint64_t samples,
		       uint64_t value)
{
	p->lost_samples[reason] = sat_add(p->lost_samples[reason], samples);
	p->lost_value[reason] = sat_add(p->lost_value[reason], value);
	if (reason == WIRE_LOST_BUFFER)
		p->cum_lost_buffer = sat_add(p->cum_lost_buffer, samples);
	if (reason == PROC_LOST_AWAY)
		p->cum_lost_away = sat_add(p->cum_lost_away, samples);
	p->info.n_lost = sat_add(p->info.n_lost, samples);
	p->info.win_lost = sat_add(p->info.win_lost, samples);
	p->reg->total_lost = sat_add(p->reg->total_lost, samples);
}

void proc_count_lost(struct proc *p, unsigned reason, uint64_t samples,
		     uint64_t value)
{
	assert(reason > PROC_LOST_AWAY && reason <= PROC_LOST_MAX);
	count_lost(p, reason, samples, value > INT64_MAX ? INT64_MAX : value);
}

void proc_carry_lost(struct proc *p, unsigned reason, uint64_t samples,
		      uint64_t value)
{
	assert(reason > PROC_LOST_AWAY && reason <= PROC_LOST_MAX);
	p->lost_samples[reason] = sat_add(p->lost_samples[reason], samples);
	p->lost_value[reason] = sat_add(p->lost_value[reason],
					value > INT64_MAX ? INT64_MAX : value);
	p->info.win_lost = sat_add(p->info.win_lost, samples);
}

void procs_count_lost(struct procs *reg, uint64_t samples)
{
	reg->total_lost = sat_add(reg->total_lost, samples);
}

int proc_add_lost(struct proc_session *s, uint64_t reason, uint64_t samples,
		  uint64_t value, char *err)
{
	struct proc *p = s->proc;
	if (reason < 1 || reason > WIRE_LOST_REASON_MAX) {
		snprintf(err, PROC_ERR_LEN, "LOST: unknown reason %" PRIu64,
			 reason);
		return -EPROTO;
	}
	if (samples > INT64_MAX || value > INT64_MAX) {
		snprintf(err, PROC_ERR_LEN,
			 "LOST: samples or value out of range");
		return -EPROTO;
	}
	count_lost(p, (unsigned)reason, samples, value);
	if (p->reg->tap.lost)
		p->reg->tap.lost(p->reg->tap.arg, p, (unsigned)reason, samples,
				 value);
	s->n_lost = sat_add(s->n_lost, samples);
	p->heard_unix_ns = now_unix_ns();
	return 0;
}

/* BYE's sample count against what reached us. The library counts in
 * B_SAMPLES every sample it queued in a SAMPLES frame (not those it
 * dropped for want of buffer space: it reports them as WIRE_LOST_BUFFER
 * and takes them out), and keeps every frame queued until it is sent
 * whole, to one collector or, after a reconnection, to the next. So what
 * we know of is what we received, what was written before this object
 * (HELLO's WRITTEN, and what we wrote for it ourselves: see the top of
 * proc.h), plus gaps already counted (a BYE seen twice adds nothing).
 * Anything more went to a collector that is gone (killed before writing
 * it) or died in a socket buffer. */
static void count_gap(struct proc *p, const struct proc_bye *bye)
{
	uint64_t known = sat_add(sat_add(p->info.n_samples,
					 p->info.written_before),
				 p->cum_lost_away);
	if (!bye->has_samples || bye->samples <= known)
		return;
	uint64_t gap = bye->samples - known, value;
	if (__builtin_mul_overflow(gap, p->info.period_ns, &value))
		value = UINT64_MAX;
	count_lost(p, PROC_LOST_AWAY, gap, value > INT64_MAX ? INT64_MAX
							       : value);
	log_info("pid %" PRIu64 ": took %" PRIu64 " samples, of which this "
		 "collector received %" PRIu64 " and %" PRIu64 " were "
		 "written before: %" PRIu64 " counted as lost (collector "
		 "away)%s",
		 p->info.pid, bye->samples, p->info.n_samples,
		 p->info.written_before, gap,
		 p->info.joined_late ? "; it had reconnected from another "
				       "collector" : "");
}

void proc_set_bye(struct proc_session *s, const struct proc_bye *bye)
{
	struct proc *p = s->proc;
	p->info.has_bye = 1;
	p->info.bye = *bye;
	if (bye->achieved_ns && bye->achieved_ns != p->info.period_ns) {
		p->info.achieved_ns = bye->achieved_ns;
		/* HELLO's PERIOD_NS is optional: 0 when it was not sent */
		log_info("pid %" PRIu64 ": sampling rate asked %" PRIu64
			 " Hz, achieved %" PRIu64 " Hz", p->info.pid,
			 p->info.period_ns ? 1000000000u / p->info.period_ns
					   : 0,
			 1000000000u / bye->achieved_ns);
	}
	if (bye->has_end_mono && bye->end_mono_ns > p->max_mono_ns)
		p->max_mono_ns = bye->end_mono_ns;
	p->heard_unix_ns = now_unix_ns();
	count_gap(p, bye);
}

/* ---- written samples ------------------------------------------------------ */

void proc_mark_written(struct proc *p)
{
	p->n_written = p->info.n_samples;
	for (struct proc_session *s = p->sessions; s; s = s->next) {
		s->n_to_ack = s->n_samples;
		if (p->reg->written_fn && s->owner)
			p->reg->written_fn(p->reg->written_arg, s->owner);
	}
}

void procs_set_written_hook(struct procs *reg,
			    void (*fn)(void *arg, void *owner), void *arg)
{
	reg->written_fn = fn;
	reg->written_arg = arg;
}

void proc_session_set_owner(struct proc_session *s, void *owner)
{
	s->owner = owner;
}

int proc_session_to_ack(const struct proc_session *s, uint64_t *n)
{
	if (s->n_to_ack <= s->n_acked)
		return 0;
	*n = s->n_to_ack;
	return 1;
}

void proc_session_acked(struct proc_session *s, uint64_t n)
{
	if (n <= s->n_acked)
		return;
	s->proc->n_acked = sat_add(s->proc->n_acked, n - s->n_acked);
	s->n_acked = n;
}

/* ---- readers ------------------------------------------------------------ */

const struct proc_info *proc_info(const struct proc *p)
{
	return &p->info;
}

const struct agg *proc_agg(const struct proc *p)
{
	return p->agg;
}

uint32_t proc_n_threads(const struct proc *p)
{
	return p->n_threads;
}

void proc_thread(const struct proc *p, uint32_t idx, uint64_t *tid,
		 uint32_t *name_sid)
{
	assert(idx >= 1 && idx <= p->n_threads);
	*tid = p->threads[idx].tid;
	*name_sid = p->threads[idx].name_sid;
}

void proc_lost(const struct proc *p, unsigned reason, uint64_t *samples,
	       uint64_t *value)
{
	assert(reason >= 1 && reason <= PROC_LOST_MAX);
	*samples = p->lost_samples[reason];
	*value = p->lost_value[reason];
}

uint64_t proc_end_unix_ns(const struct proc *p)
{
	const struct proc_info *in = &p->info;
	if (in->has_start_mono && p->max_mono_ns >= in->start_mono_ns)
		return sat_add(in->start_unix_ns,
			       p->max_mono_ns - in->start_mono_ns);
	return p->heard_unix_ns > in->start_unix_ns ? p->heard_unix_ns
						    : in->start_unix_ns;
}

int proc_is_live(const struct proc *p)
{
	return p->n_sessions > 0;
}

void proc_window_reset(struct proc *p, uint64_t start_unix_ns)
{
	agg_clear(p->agg);
	if (p->heap)
		heapagg_window_reset(p->heap);
	memset(p->lost_samples, 0, sizeof(p->lost_samples));
	memset(p->lost_value, 0, sizeof(p->lost_value));
	p->info.win_samples = 0;
	p->info.win_lost = 0;
	p->info.win_start_unix_ns = start_unix_ns;
}

/* ---- heap profiles ------------------------------------------------------ */

int proc_check_heap(const struct proc_session *s,
		    const struct proc_heap_rec *recs, size_t n,
		    uint64_t first_index, char *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct proc_heap_rec *r = &recs[i];
		const char *why = NULL;
		switch (r->kind) {
		case WIRE_HEAP_ALLOC:
			if (r->node - 1 >= s->nodes.n)
				why = "node is not a defined node";
			else if (r->thread - 1 >= s->threads.n)
				why = "thread is not a defined thread ref";
			else if (r->size == 0 || r->size > INT64_MAX)
				why = "size out of range";
			else if (r->addr == 0)
				why = "address 0";
			break;
		case WIRE_HEAP_FREE:
			if (r->addr == 0)
				why = "address 0";
			break;
		case WIRE_HEAP_LOST:
			if (r->n > INT64_MAX || r->bytes > INT64_MAX)
				why = "count out of range";
			break;
		default:
			why = "unknown record kind";
		}
		if (!why)
			continue;
		snprintf(err, PROC_ERR_LEN,
			 "HEAP record %" PRIu64 " (kind %" PRIu64 "): %s",
			 first_index + i, r->kind, why);
		return -EPROTO;
	}
	return 0;
}

int proc_add_heap(struct proc_session *s, uint64_t rate,
		  const struct proc_heap_rec *recs, size_t n, char *err)
{
	struct proc *p = s->proc;

	if (!p->heap && !(p->heap = heapagg_new()))
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		const struct proc_heap_rec *r = &recs[i];
		if (r->kind == WIRE_HEAP_ALLOC) {
			assert(r->node - 1 < s->nodes.n);
			int rc = heapagg_alloc(p->heap, rate,
					       s->nodes.v[r->node], r->size,
					       r->addr);
			if (rc < 0)
				return oom(err);
			if (rc == 1 && heapagg_n_over(p->heap) == 1)
				log_warn("pid %" PRIu64 ": %u sampled heap "
					 "blocks in use, the most kept per "
					 "process: further allocations are "
					 "counted as lost", p->info.pid,
					 HEAPAGG_LIVE_MAX);
		} else if (r->kind == WIRE_HEAP_FREE) {
			heapagg_release(p->heap, r->addr);
		} else {
			heapagg_lost(p->heap, rate, r->n, r->bytes);
		}
	}
	p->heard_unix_ns = now_unix_ns();
	return 0;
}

int proc_heap_snapshot(struct proc_session *s, uint64_t seq, char *err)
{
	struct proc *p = s->proc;
	uint64_t now = now_mono_ns();
	const char *skip = NULL;

	if (seq == 0) {
		snprintf(err, PROC_ERR_LEN, "HEAP_SNAPSHOT with seq 0");
		return -EPROTO;
	}
	/* Each snapshot is a file written and synced: a client asking
	 * faster than the library ever does (once a second at most), or
	 * for a heap it never sent, gets none. */
	if (!heapagg_has_data(p->heap))
		skip = "it sent no heap data";
	else if (p->snap_last_ns && now - p->snap_last_ns < PROC_SNAP_MIN_NS)
		skip = "less than " PROC_SNAP_MIN_TEXT " after the last one";
	if (skip) {
		if (p->n_snap_skipped++ == 0)
			log_info("pid %" PRIu64 ": heap snapshot %" PRIu64
				 " not written: %s (further ones skipped "
				 "likewise)", p->info.pid, seq, skip);
		else
			log_debug("pid %" PRIu64 ": heap snapshot %" PRIu64
				  " not written: %s", p->info.pid, seq, skip);
		return 0;
	}
	if (!p->snap_seq)
		p->reg->n_snap_pending++;
	p->snap_seq = seq;
	p->snap_last_ns = now;
	return 0;
}

struct proc *procs_next_snapshot(struct procs *reg, uint64_t *seq)
{
	if (!reg->n_snap_pending)
		return NULL;
	for (struct proc *p = reg->head; p; p = p->next) {
		if (!p->snap_seq)
			continue;
		*seq = p->snap_seq;
		p->snap_seq = 0;
		reg->n_snap_pending--;
		return p;
	}
	return NULL;
}

const struct heapagg *proc_heap(const struct proc *p)
{
	return p->heap;
}

/* ---- symtab compaction -------------------------------------------------- */

uint64_t procs_refs_bound(const struct procs *reg)
{
	return reg->n_refs;
}

static void mark_node(void *st, uint32_t node)
{
	symtab_gc_mark_node(st, node);
}

static void mark_proc(struct symtab *st, const struct proc *p)
{
	const struct agg_entry *e;
	size_t pos = 0;

	symtab_gc_mark_string(st, p->info.exe_sid);
	symtab_gc_mark_string(st, p->info.comm_sid);
	symtab_gc_mark_string(st, p->info.pyversion_sid);
	for (size_t i = 0; i < p->info.n_args; i++)
		symtab_gc_mark_string(st, p->info.arg_sids[i]);
	for (uint32_t i = 1; i <= p->n_threads; i++)
		symtab_gc_mark_string(st, p->threads[i].name_sid);
	while ((e = agg_next(p->agg, &pos)))
		symtab_gc_mark_node(st, e->node);
	if (p->heap)
		heapagg_each_node(p->heap, mark_node, st);
	for (const struct proc_session *s = p->sessions; s; s = s->next) {
		for (size_t i = 1; i <= s->strings.n; i++)
			symtab_gc_mark_string(st, s->strings.v[i]);
		for (size_t i = 1; i <= s->functions.n; i++)
			symtab_gc_mark_function(st, s->functions.v[i]);
		for (size_t i = 1; i <= s->locations.n; i++)
			symtab_gc_mark_location(st, s->locations.v[i]);
		for (size_t i = 1; i <= s->nodes.n; i++)
			symtab_gc_mark_node(st, s->nodes.v[i]);
		for (size_t i = 1; i <= s->mappings.n; i++)
			symtab_gc_mark_mapping(st, s->mappings.v[i]);
	}
}

static uint32_t new_node(const void *st, uint32_t old)
{
	return symtab_gc_new_node(st, old);
}

static void renumber_proc(const struct symtab *st, struct proc *p)
{
	struct proc_info *in = &p->info;

	in->exe_sid = symtab_gc_new_string(st, in->exe_sid);
	in->comm_sid = symtab_gc_new_string(st, in->comm_sid);
	in->pyversion_sid = symtab_gc_new_string(st, in->pyversion_sid);
	for (size_t i = 0; i < in->n_args; i++)
		in->arg_sids[i] = symtab_gc_new_string(st, in->arg_sids[i]);
	for (uint32_t i = 1; i <= p->n_threads; i++)
		p->threads[i].name_sid =
			symtab_gc_new_string(st, p->threads[i].name_sid);
	agg_renumber(p->agg, new_node, st);
	if (p->heap)
		heapagg_renumber(p->heap, new_node, st);
	for (struct proc_session *s = p->sessions; s; s = s->next) {
		for (size_t i = 1; i <= s->strings.n; i++)
			s->strings.v[i] = symtab_gc_new_string(st, s->strings.v[i]);
		for (size_t i = 1; i <= s->functions.n; i++)
			s->functions.v[i] =
				symtab_gc_new_function(st, s->functions.v[i]);
		for (size_t i = 1; i <= s->locations.n; i++)
			s->locations.v[i] =
				symtab_gc_new_location(st, s->locations.v[i]);
		for (size_t i = 1; i <= s->nodes.n; i++)
			s->nodes.v[i] = symtab_gc_new_node(st, s->nodes.v[i]);
		for (size_t i = 1; i <= s->mappings.n; i++)
			s->mappings.v[i] =
				symtab_gc_new_mapping(st, s->mappings.v[i]);
	}
}

int procs_compact(struct procs *reg)
{
	struct symtab *st = reg->st;
	int rc = symtab_gc_begin(st);

	if (rc < 0)
		return rc;
	for (const struct proc *p = reg->head; p; p = p->next)
		mark_proc(st, p);
	for (const struct proc *p = reg->copies; p; p = p->next)
		mark_proc(st, p);
	rc = symtab_gc_rebuild(st);
	if (rc == 0) {
		for (struct proc *p = reg->head; p; p = p->next)
			renumber_proc(st, p);
		for (struct proc *p = reg->copies; p; p = p->next)
			renumber_proc(st, p);
	}
	symtab_gc_end(st);
	if (rc == 0)
		reg->gc_kept = symtab_n_entries(st);
	return rc;
}

void procs_set_timeline(struct procs *reg, struct timeline *tl)
{
	reg->timeline = tl;
}

int procs_maybe_compact(struct procs *reg, int at_boundary)
{
	uint64_t n = symtab_n_entries(reg->st);
	size_t bytes = symtab_bytes(reg->st);
	int rc;

	if (n < PROCS_GC_MIN_ENTRIES || reg->timeline)
		return 0;
	if (n <= 2 * reg->n_refs && !(at_boundary && n >= 2 * reg->gc_kept))
		return 0;
	rc = procs_compact(reg);
	if (rc < 0) {
		log_warn("cannot compact the symbol tables (%" PRIu64
			 " entries): %s; will try again later", n,
			 strerror(-rc));
		return 0;
	}
	log_debug("symbol tables compacted: %" PRIu64 " entries (%zu bytes) "
		  "-> %" PRIu64 " (%zu bytes), %zu processes held",
		  n, bytes, reg->gc_kept, symtab_bytes(reg->st), reg->n);
	return 1;
}

/* ---- taps and copies --------------------------------------------------- */

void procs_set_tap(struct procs *reg, const struct procs_tap *tap)
{
	if (tap)
		reg->tap = *tap;
	else
		reg->tap = (struct procs_tap){ 0 };
}

uint64_t proc_last_mono_ns(const struct proc *p)
{
	return p->max_mono_ns;
}

struct proc *proc_copy_new(const struct proc *src)
{
	struct procs *reg = src->reg;
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	idhash_init(&p->thread_hash);
	p->reg = reg;
	p->is_copy = 1;
	p->info = src->info;
	p->info.arg_sids = NULL;
	p->info.n_samples = p->info.n_lost = 0;
	p->info.win_samples = p->info.win_lost = 0;
	p->agg = agg_new();
	if (src->info.n_args)
		p->info.arg_sids = malloc(src->info.n_args * sizeof(uint32_t));
	if (!p->agg || (src->info.n_args && !p->info.arg_sids)) {
		agg_free(p->agg);
		free(p->info.arg_sids);
		free(p);
		return NULL;
	}
	if (src->info.n_args)
		memcpy(p->info.arg_sids, src->info.arg_sids,
		       src->info.n_args * sizeof(uint32_t));
	add_refs(p, 3 + p->info.n_args);
	p->heard_unix_ns = src->heard_unix_ns;
	DLIST_PUSH(reg->copies, p);
	reg->n_copies++;
	return p;
}

int proc_copy_add(struct proc *copy, const struct proc *src, uint32_t node,
		  uint32_t thread, uint32_t flags, uint64_t count,
		  uint64_t value, uint64_t t_mono_ns)
{
	assert(copy->is_copy && thread >= 1 && thread <= src->n_threads);
	/* Thread numbers only grow in src: copying its table's prefix keeps
	 * them equal in both. */
	if (thread > copy->n_threads) {
		uint32_t n = src->n_threads;
		if ((size_t)n + 1 > copy->threads_cap) {
			size_t cap = (size_t)n + 16;
			struct proc_thread *t =
				realloc(copy->threads, cap * sizeof(*t));
			if (!t)
				return -ENOMEM;
			copy->threads = t;
			copy->threads_cap = cap;
		}
		memcpy(copy->threads + copy->n_threads + 1,
		       src->threads + copy->n_threads + 1,
		       (n - copy->n_threads) * sizeof(*copy->threads));
		add_refs(copy, n - copy->n_threads);
		copy->n_threads = n;
	}
	if (agg_add(copy->agg, node, thread, flags, count, value) < 0)
		return -ENOMEM;
	copy->info.n_samples = sat_add(copy->info.n_samples, count);
	copy->info.win_samples = copy->info.n_samples;
	if (t_mono_ns > copy->max_mono_ns)
		copy->max_mono_ns = t_mono_ns;
	return 0;
}

void proc_copy_sync(struct proc *copy, const struct proc *src)
{
	assert(copy->is_copy);
	copy->info.achieved_ns = src->info.achieved_ns;
	copy->info.has_bye = src->info.has_bye;
	copy->info.bye = src->info.bye;
}

void proc_copy_add_lost(struct proc *copy, unsigned reason,
			uint64_t samples, uint64_t value)
{
	assert(copy->is_copy && reason >= 1 && reason <= PROC_LOST_MAX);
	copy->lost_samples[reason] = sat_add(copy->lost_samples[reason],
					     samples);
	copy->lost_value[reason] = sat_add(copy->lost_value[reason], value);
	copy->info.n_lost = sat_add(copy->info.n_lost, samples);
	copy->info.win_lost = copy->info.n_lost;
}

void proc_copy_free(struct proc *copy)
{
	struct procs *reg;

	if (!copy)
		return;
	assert(copy->is_copy);
	reg = copy->reg;
	DLIST_UNLINK(reg->copies, copy);
	reg->n_copies--;
	proc_free(copy);
	if (reg->n == 0 && reg->n_copies == 0 && reg->head == NULL) {
		assert(reg->n_refs == 0);
		symtab_clear(reg->st);
		reg->gc_kept = 0;
	}
}
