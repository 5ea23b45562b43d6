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
 * This file holds the registry, sessions, samples and losses, written
 * counts, readers and compaction; a connection's definitions are in
 * proc_def.c, heap profiles in proc_heap.c, taps and the windows' copies
 * in proc_copy.c (they share the structs through proc_impl.h).
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
#include "daemon/proc_impl.h"
#include "daemon/timeline.h"

#define FLAGS_KNOWN                                                      \
	(WIRE_SF_TRUNCATED | WIRE_SF_OFF_CPU | WIRE_SF_GIL |             \
	 WIRE_SF_GIL_KNOWN | WIRE_SF_NATIVE | WIRE_SF_NATIVE_KNOWN |     \
	 WIRE_SF_OPCODE | WIRE_SF_LABELS | WIRE_SF_WAIT_BLOCK |          \
	 WIRE_SF_WAIT_MUTEX | WIRE_SF_TIME_KNOWN | WIRE_SF_TIME_NATIVE | \
	 WIRE_SF_TIME_SYSTEM)

/* ---- id maps ------------------------------------------------------------ */

static void idmap_fini(struct idmap *m)
{
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
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
	free(reg->def_users);
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

uint64_t procs_total_waits(const struct procs *reg)
{
	return reg->total_waits;
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
	if (p->info.joined_late)
		p->info.from_unix_ns = p->info.win_start_unix_ns;
	p->info.written_before = h->has_written ? h->written : 0;
	for (unsigned i = 0; h->conn_seq && h->has_start_unix &&
			     i < PROCS_TOMBS;
	     i++) {
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
	proc_def_release(s);
	session_refs_closed(s);
	idmap_fini(&s->strings);
	idmap_fini(&s->functions);
	idmap_fini(&s->locations);
	idmap_fini(&s->nodes);
	idmap_fini(&s->threads);
	idmap_fini(&s->mappings);
	idmap_fini(&s->labels);
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
		else if ((r->flags & WIRE_SF_WAIT_BLOCK) &&
			 (r->flags & WIRE_SF_WAIT_MUTEX))
			why = "both WAIT_BLOCK and WAIT_MUTEX";
		else if (r->count > INT64_MAX || r->value > INT64_MAX)
			why = "count or value out of range";
		else if (r->opcode > 255)
			why = "opcode is not a byte";
		else if ((r->flags & WIRE_SF_LABELS) &&
			 r->labels - 1 >= s->labels.n)
			why = "labels is not a defined label set";
		else
			continue;
		snprintf(err, ERR_LEN,
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
	if (!(f & WIRE_SF_TIME_KNOWN))
		f &= ~(uint64_t)(WIRE_SF_TIME_NATIVE | WIRE_SF_TIME_SYSTEM);
	if (mode != WIRE_MODE_WALL)
		f &= ~(uint64_t)WIRE_SF_OFF_CPU;
	/* the set itself is the key's labels field */
	f &= ~(uint64_t)WIRE_SF_LABELS;
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
	const uint32_t *sets = s->labels.v;
	unsigned mode = p->info.mode;
	uint64_t count = 0, waits = 0, t = *clock_ns;

	for (size_t i = 0; i < n; i++) {
		const struct proc_sample *r = &recs[i];
		assert(r->node - 1 < s->nodes.n &&
		       r->thread - 1 < s->threads.n);
		uint32_t flags = agg_key_flags(norm_flags(r->flags, mode),
					       (unsigned)r->opcode);
		uint32_t labels = r->flags & WIRE_SF_LABELS ? sets[r->labels]
							    : 0;
		if (agg_add(p->agg, nodes[r->node], threads[r->thread], flags,
			    labels, r->count, r->value) < 0)
			return oom(err);
		int wait = (flags & WIRE_SF_WAITS) != 0;
		count = sat_add(count, r->count);
		if (wait)
			waits = sat_add(waits, r->count);
		t = sat_add(t, r->dt_ns);
		if (p->reg->tap.sample)
			p->reg->tap.sample(p->reg->tap.arg, p, nodes[r->node],
					   threads[r->thread], flags, labels,
					   r->count, r->value, t);
		if (p->reg->timeline && !wait)
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
	p->info.n_waits = sat_add(p->info.n_waits, waits);
	p->info.win_waits = sat_add(p->info.win_waits, waits);
	p->reg->total_samples = sat_add(p->reg->total_samples, count);
	p->reg->total_waits = sat_add(p->reg->total_waits, waits);
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
		snprintf(err, ERR_LEN, "LOST: unknown reason %" PRIu64,
			 reason);
		return -EPROTO;
	}
	if (samples > INT64_MAX || value > INT64_MAX) {
		snprintf(err, ERR_LEN,
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
	count_lost(p, PROC_LOST_AWAY, gap, value > INT64_MAX ? INT64_MAX : value);
	log_info("pid %" PRIu64 ": took %" PRIu64 " samples, of which this "
		 "collector received %" PRIu64 " and %" PRIu64 " were "
		 "written before: %" PRIu64 " counted as lost (collector "
		 "away)%s",
		 p->info.pid, bye->samples, p->info.n_samples,
		 p->info.written_before, gap,
		 p->info.joined_late ? "; it had reconnected from another "
				       "collector"
				     : "");
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
			 " Hz, achieved %" PRIu64 " Hz",
			 p->info.pid,
			 p->info.period_ns ? 1000000000u / p->info.period_ns
					   : 0,
			 1000000000u / bye->achieved_ns);
	}
	if (bye->has_end_mono && bye->end_mono_ns > p->max_mono_ns)
		p->max_mono_ns = bye->end_mono_ns;
	p->heard_unix_ns = now_unix_ns();
	count_gap(p, bye);
}

void proc_session_sampling(struct proc_session *s, int on, uint64_t period_ns,
			   uint64_t since_mono_ns, int came_dormant)
{
	struct proc *p = s->proc;
	if (!on)
		return;
	if (period_ns)
		p->info.period_ns = period_ns;
	if (came_dormant && !p->info.seen_on && since_mono_ns &&
	    p->info.has_start_mono)
		p->info.from_unix_ns = sample_unix_ns(p, since_mono_ns);
	p->info.seen_on = 1;
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

void procs_each_owner(struct procs *reg, uint64_t pid,
		      const struct proc *except,
		      void (*fn)(void *arg, void *owner), void *arg)
{
	for (struct proc *p = reg->head; p; p = p->next) {
		if (p == except || p->info.pid != pid)
			continue;
		for (struct proc_session *s = p->sessions; s; s = s->next)
			if (s->owner)
				fn(arg, s->owner);
	}
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
	if (p->heap) {
		heapagg_set_now(p->heap, start_unix_ns);
		heapagg_window_reset(p->heap);
	}
	memset(p->lost_samples, 0, sizeof(p->lost_samples));
	memset(p->lost_value, 0, sizeof(p->lost_value));
	p->info.win_samples = 0;
	p->info.win_lost = 0;
	p->info.win_waits = 0;
	p->info.win_start_unix_ns = start_unix_ns;
}

/* ---- copies' end (made in proc_copy.c; freed here, with the registry) -- */

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

/* ---- symtab compaction -------------------------------------------------- */

uint64_t procs_refs_bound(const struct procs *reg)
{
	return reg->n_refs;
}

static void mark_heap_key(void *st, uint32_t node, uint32_t labels)
{
	symtab_gc_mark_node(st, node);
	symtab_gc_mark_labels(st, labels);
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
	while ((e = agg_next(p->agg, &pos))) {
		symtab_gc_mark_node(st, e->node);
		symtab_gc_mark_labels(st, e->labels);
	}
	if (p->heap)
		heapagg_each_key(p->heap, mark_heap_key, st);
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
		for (size_t i = 1; i <= s->labels.n; i++)
			symtab_gc_mark_labels(st, s->labels.v[i]);
	}
}

static uint32_t new_node(const void *st, uint32_t old)
{
	return symtab_gc_new_node(st, old);
}

static uint32_t new_labels(const void *st, uint32_t old)
{
	return symtab_gc_new_labels(st, old);
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
	agg_renumber(p->agg, new_node, new_labels, st);
	if (p->heap)
		heapagg_renumber(p->heap, new_node, new_labels, st);
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
		for (size_t i = 1; i <= s->labels.n; i++)
			s->labels.v[i] =
				symtab_gc_new_labels(st, s->labels.v[i]);
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
			 " entries): %s; will try again later",
			 n,
			 strerror(-rc));
		return 0;
	}
	log_debug("symbol tables compacted: %" PRIu64 " entries (%zu bytes) "
		  "-> %" PRIu64 " (%zu bytes), %zu processes held",
		  n, bytes, reg->gc_kept, symtab_bytes(reg->st), reg->n);
	return 1;
}
