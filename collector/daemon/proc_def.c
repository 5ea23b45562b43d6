/*
 * proc_def.c - the definitions a connection sends (STRING, FUNCTION,
 * LOCATION, NODE, THREAD, MAPPING, ADDRESS, LABELS; see proc.h): each checked
 * against its session's id maps and budget, interned in the symtab, and
 * pushed onto the session's map from connection id to collector-wide id.
 * A thread's (tid, name) pairs are interned in its process. Split from
 * proc.c, whose structs it shares through proc_impl.h.
 *
 * Every check happens before any state changes, so a rejected frame
 * leaves nothing behind. Runs on the collector's loop thread.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"
#include "common/log.h"
#include "daemon/proc.h"
#include "daemon/proc_impl.h"
#include "daemon/symtab.h"
#include "symbols/elfsym.h"

/* A definition costs at least this many bytes of budget, so that empty
 * strings or millions of tiny definitions are still counted. */
#define PROC_DEF_COST 16

/* ---- id maps ------------------------------------------------------------ */

static int idmap_push(struct idmap *m, uint32_t gid)
{
	/* ids start at 1: v[0] is unused */
	if (grow_array(&m->v, &m->cap, m->n + 2, sizeof(*m->v), 256) < 0)
		return -ENOMEM;
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
		snprintf(err, ERR_LEN, "%s id %" PRIu64 " over the limit of %u ids", kind, id, WIRE_MAX_IDS);
		return -EPROTO;
	}
	if (id != m->n + 1) {
		snprintf(err, ERR_LEN, "%s id %" PRIu64 " out of order (expected %zu)", kind, id, m->n + 1);
		return -EPROTO;
	}
	return 0;
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

/* ---- what definitions cost ---------------------------------------------- */

void procs_set_def_limits(struct procs *reg, uint64_t total,
			  uint64_t per_user, unsigned own_uid)
{
	reg->max_def_total = total;
	reg->max_def_user = per_user;
	reg->own_uid = own_uid;
}

uint64_t procs_def_bytes(const struct procs *reg)
{
	return reg->def_total;
}

void proc_session_set_uid(struct proc_session *s, unsigned uid)
{
	assert(s->def_bytes == 0);
	s->uid = uid;
	s->has_uid = 1;
	s->proc->info.peer_uid = uid;
}

/* The entry of uid in the per-uid table; with make, a new one (a free
 * entry reused) if it has none. NULL without one, or out of memory. */
static struct def_user *def_user(struct procs *reg, unsigned uid, int make)
{
	struct def_user *free_one = NULL;
	for (size_t i = 0; i < reg->n_def_users; i++) {
		struct def_user *u = &reg->def_users[i];
		if (u->bytes && u->uid == uid)
			return u;
		if (!u->bytes && !free_one)
			free_one = u;
	}
	if (!make)
		return NULL;
	if (!free_one) {
		if (grow_array(&reg->def_users, &reg->cap_def_users,
			       reg->n_def_users + 1, sizeof(*reg->def_users),
			       8) < 0)
			return NULL;
		free_one = &reg->def_users[reg->n_def_users++];
	}
	free_one->uid = uid;
	free_one->bytes = 0;
	return free_one;
}

/* Whether the session's uid is held to the per-uid bound. */
static int user_bounded(const struct proc_session *s)
{
	return s->has_uid && s->proc->reg->max_def_user &&
	       s->uid != s->proc->reg->own_uid;
}

/* Charges a definition of bytes to s, its uid and all sessions, or says
 * which bound it would pass. The connection's own bound comes first: a
 * client alone past it is broken whatever the others hold. */
static int charge(struct proc_session *s, size_t bytes, char *err)
{
	struct procs *reg = s->proc->reg;
	uint64_t cost = (uint64_t)bytes + PROC_DEF_COST;
	struct def_user *u = NULL;

	if (s->def_bytes + cost > PROC_MAX_DEF_BYTES) {
		snprintf(err, ERR_LEN,
			 "definitions exceed the limit of %u MiB",
			 PROC_MAX_DEF_BYTES >> 20);
		return -EPROTO;
	}
	if (reg->max_def_total && reg->def_total + cost > reg->max_def_total) {
		snprintf(err, ERR_LEN,
			 "the definitions of all clients together would "
			 "pass --max-memory (%" PRIu64 " MiB)",
			 reg->max_def_total >> 20);
		return -EPROTO;
	}
	if (user_bounded(s)) {
		u = def_user(reg, s->uid, 1);
		if (!u)
			return oom(err);
		if (u->bytes + cost > reg->max_def_user) {
			snprintf(err, ERR_LEN,
				 "the definitions of uid %u's clients together "
				 "would pass --max-memory-per-user (%" PRIu64
				 " MiB)",
				 s->uid, reg->max_def_user >> 20);
			return -EPROTO;
		}
		u->bytes += cost;
	}
	s->def_bytes += cost;
	reg->def_total += cost;
	return 0;
}

void proc_def_release(struct proc_session *s)
{
	struct procs *reg = s->proc->reg;
	struct def_user *u;

	assert(reg->def_total >= s->def_bytes);
	reg->def_total -= s->def_bytes;
	/* A bounded session charged its uid all it holds: the entry made
	 * for it exists while it holds anything. */
	if (user_bounded(s) && s->def_bytes &&
	    (u = def_user(reg, s->uid, 0)) != NULL) {
		assert(u->bytes >= s->def_bytes);
		u->bytes -= s->def_bytes;
	}
	s->def_bytes = 0;
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
	snprintf(err, ERR_LEN, "%s %" PRIu64 ": %s %" PRIu64 " is not a defined %s", kind, id, field, ref, what);
	return -EPROTO;
}

static int check_line(uint64_t line, const char *kind, uint64_t id,
		      const char *field, char *err)
{
	if (line <= INT32_MAX)
		return 0;
	snprintf(err, ERR_LEN, "%s %" PRIu64 ": %s %" PRIu64 " is out of range", kind, id, field, line);
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
		snprintf(err, ERR_LEN, "MAPPING %" PRIu64 ": %s", id,
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
		snprintf(err, ERR_LEN, "ADDRESS %" PRIu64 ": address 0",
			 id);
		return -EPROTO;
	}
	if (mapping) {
		struct symtab_mapping m;
		mid = s->mappings.v[mapping];
		symtab_mapping(st, mid, &m);
		if (addr < m.start || addr >= m.limit) {
			snprintf(err, ERR_LEN, "ADDRESS %" PRIu64 ": %#" PRIx64 " is outside mapping %" PRIu64,
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
		snprintf(err, ERR_LEN, "NODE %" PRIu64 ": stack deeper than %u frames", id, WIRE_MAX_DEPTH);
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
	if (grow_array(&p->threads, &p->threads_cap, (size_t)p->n_threads + 2,
		       sizeof(*p->threads), 16) < 0)
		return -ENOMEM;
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
		snprintf(err, ERR_LEN, "THREAD %" PRIu64 ": tid %" PRIu64 " is out of range", ref, tid);
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

/* ---- label sets --------------------------------------------------------- */

/* Why key sid (collector-wide) cannot be a label's key, or NULL: the
 * empty string names nothing in pprof, and the names the collector writes
 * itself (wire.h) would give a sample two values for one of them. */
static const char *bad_key(const struct symtab *st, uint32_t sid)
{
	const char *key = symtab_string(st, sid);

	if (!key[0])
		return "an empty key";
	if (wire_label_reserved(key, strlen(key)))
		return "a key the collector writes itself";
	return NULL;
}

int proc_def_labels(struct proc_session *s, uint64_t id, const uint64_t *kv,
		    size_t n, char *err)
{
	struct symtab *st = s->proc->reg->st;
	uint32_t gkv[2 * WIRE_MAX_LABELS], lsid;
	const char *why = NULL;
	int rc;

	if ((rc = check_new_id(&s->labels, id, "LABELS", err)) < 0)
		return rc;
	if (n == 0 || n > WIRE_MAX_LABELS) {
		snprintf(err, ERR_LEN, "LABELS %" PRIu64 ": %zu pairs "
				       "(1 to %u are allowed)",
			 id, n, WIRE_MAX_LABELS);
		return -EPROTO;
	}
	for (size_t i = 0; i < 2 * n; i++) {
		if ((rc = check_ref(&s->strings, kv[i], "LABELS", id,
				    i % 2 ? "value" : "key", "string",
				    err)) < 0)
			return rc;
		gkv[i] = s->strings.v[kv[i]];
	}
	/* Keys compare by content (two string ids may say the same), at
	 * most 64 of them: quadratic is fine. */
	for (size_t i = 0; i < n && !why; i++) {
		why = bad_key(st, gkv[2 * i]);
		for (size_t j = 0; j < i && !why; j++)
			if (gkv[2 * j] == gkv[2 * i])
				why = "a key given twice";
		if (why) {
			const char *key = symtab_string(st, gkv[2 * i]);
			char shown[48];
			log_printable(shown, sizeof(shown), key, strlen(key));
			snprintf(err, ERR_LEN, "LABELS %" PRIu64 ": pair %zu has %s (\"%s\")", id, i, why,
				 shown);
		}
	}
	if (why)
		return -EPROTO;
	if ((rc = charge(s, 8 * n, err)) < 0)
		return rc;
	if (symtab_intern_labels(st, gkv, n, &lsid) < 0 ||
	    session_push(s, &s->labels, lsid) < 0)
		return oom(err);
	return 0;
}
