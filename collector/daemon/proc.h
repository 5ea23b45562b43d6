/*
 * proc.h - per-process state: what each profiled process told us, its
 * threads, its aggregate and lost counts, and the id maps of each of its
 * connections ("sessions").
 *
 * A process is keyed by (pid, start_unix_ns) from its HELLO. A client that
 * reconnects (HELLO with CONN_SEQ > 0, or simply the same key) while the
 * collector still holds that process gets a new session on the same
 * process: the client replays its definitions from id 1, so the session's
 * id maps start empty, while the aggregate carries on.
 *
 * Windows (--period): a process's aggregate and lost counts cover its
 * current window, from its start (or from when this collector first heard
 * of it) until proc_window_reset, which empties them and starts the next
 * window; the symbol tables and the connections' id maps carry on. Without
 * --period the one window is the process's whole life. The counters in
 * proc_info (n_samples, n_lost) are never reset.
 *
 * Samples a collector never saw: a process whose BYE says it took more
 * samples than this collector received from it (and than it reported
 * lost) lost them on the way: sent to a collector that was killed, or
 * buffered in a socket that died. The difference is counted as lost with
 * the collector-only reason PROC_LOST_AWAY ("[lost: collector away]"), so
 * a restart leaves a visible gap in the profile instead of a silent one.
 * Samples that are on disk are not lost: those an earlier collector wrote
 * (HELLO's WRITTEN, the sum of what collectors acknowledged with
 * CTL_WRITTEN, wire.h), and those this collector wrote for the same
 * process before it reconnected (after its program closed the socket, for
 * one: the first connection's end wrote and forgot it). For the latter the
 * registry remembers, for the last PROCS_TOMBS processes it forgot, what
 * it wrote and had not acknowledged.
 *
 * Memory for days: procs_maybe_compact renumbers the shared symtab down to
 * what live processes still hold (symtab.h, compaction), when it has grown
 * to mostly garbage.
 *
 * Who calls what: conn.c decodes frames and calls the proc_session_* and
 * proc_def_* / proc_add_* functions; they check every id and value against
 * the session's maps (wire.h's rules: dense ids in order, definitions
 * before use, node depth) and on a violation return -EPROTO with the reason
 * in err, changing nothing. collector.c decides when a process with no
 * session left is written and removed; pprof.c reads processes through the
 * accessors below.
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_PROC_H
#define PYPROF_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "pyprof/wire.h"
#include "common/errbuf.h"

struct agg;
struct symtab;
struct procs;
struct proc;
struct proc_session;


/* Lost-sample reasons: the wire's (1..WIRE_LOST_REASON_MAX), and those
 * the collector adds itself: samples that never reached it (see above),
 * and samples of a window it could not write (output.c: "[lost: not
 * written]"). */
#define PROC_LOST_AWAY (WIRE_LOST_REASON_MAX + 1)
#define PROC_LOST_NOT_WRITTEN (WIRE_LOST_REASON_MAX + 2)
#define PROC_LOST_MAX PROC_LOST_NOT_WRITTEN

/* Limit on what one connection may define (string bytes plus a fixed cost
 * per definition), so one client cannot take all the collector's memory.
 * A large application defines a few MiB. */
#define PROC_MAX_DEF_BYTES (256u << 20)

/* Bounds on the definitions all open sessions hold together (total) and
 * those of one uid's sessions (per_user; own_uid's are not bounded so),
 * in the same bytes as PROC_MAX_DEF_BYTES; 0: none (the default). A
 * definition that would pass one is refused like one past the
 * connection's own bound, its err naming the bound (--max-memory,
 * --max-memory-per-user). The uid is the one proc_session_set_uid gave;
 * a session without one counts in the total only. */
void procs_set_def_limits(struct procs *reg, uint64_t total,
			  uint64_t per_user, unsigned own_uid);
/* Bytes charged to the open sessions, all of them. */
uint64_t procs_def_bytes(const struct procs *reg);

/* A byte string inside a frame being decoded. */
struct proc_bytes {
	const uint8_t *p;
	size_t len;
};

/* HELLO as decoded by conn.c; the bytes point into the frame and are
 * copied by proc_session_open. */
struct proc_hello {
	uint64_t version, pid, ppid, uid;
	uint64_t start_unix_ns, start_mono_ns;
	int has_start_unix, has_start_mono;
	uint64_t mode, period_ns, achieved_ns, max_depth, conn_seq;
	uint64_t written; /* WRITTEN: samples earlier collectors wrote */
	int has_written;  /* it was sent (the library takes acks) */
	struct proc_bytes pyversion, exe, comm;
	const struct proc_bytes *args;
	size_t n_args;
};

/* BYE fields; absent ones are 0 with has_ unset. */
struct proc_bye {
	uint64_t samples, lost, end_mono_ns, handler_n, handler_ns, faults;
	uint64_t achieved_ns;
	uint64_t native_unmerged; /* PYPROF_NATIVE samples not merged */
	uint64_t cpu_source;	  /* enum wire_cpu_source, 0 if not sent */
	int has_samples, has_lost, has_end_mono, has_native;
};

/* One SAMPLES record as sent (ids are the connection's). */
struct proc_sample {
	uint64_t node, thread, dt_ns, count, value, flags;
	uint64_t opcode; /* with WIRE_SF_OPCODE in flags; else 0 */
	uint64_t labels; /* with WIRE_SF_LABELS: a LABELS set id; else 0 */
};

/* What a process said about itself and what we received from it. Owned by
 * proc.c; read-only for others through proc_info(). Strings are symtab
 * ids. */
struct proc_info {
	uint64_t pid, ppid, uid;
	uint64_t start_unix_ns; /* from HELLO, else when it connected */
	uint64_t start_mono_ns; /* its CLOCK_MONOTONIC at start_unix_ns */
	int has_start_mono;
	unsigned mode;	      /* enum wire_mode */
	uint64_t period_ns;   /* asked for; 0 if not sent */
	uint64_t achieved_ns; /* 0 if not sent */
	uint64_t max_depth;
	uint32_t exe_sid, comm_sid, pyversion_sid;
	uint32_t *arg_sids;
	size_t n_args;
	uint64_t n_samples;	    /* sum of SAMPLES counts accepted */
	uint64_t n_lost;	    /* sum of lost samples, all reasons */
	uint64_t win_start_unix_ns; /* the current window's start */
	uint64_t win_samples;	    /* n_samples and n_lost in the window */
	uint64_t win_lost;
	/* of n_samples and win_samples, the block and mutex records'
	 * (WIRE_SF_WAIT_*) contentions: not CPU or wall samples */
	uint64_t n_waits, win_waits;
	/* Where its profile's time begins when not at start_unix_ns (0):
	 * a process that came dormant (a later attach's, a PYPROF_START=off
	 * one) begins when this collector first saw it sampling, one that
	 * reconnected sampling when it connected. */
	uint64_t from_unix_ns;
	/* a control frame said it was sampling */
	int seen_on;
	int joined_late;	 /* first heard on a reconnection (CONN_SEQ
				    > 0): what it sent before went to
				    another collector */
	uint64_t written_before; /* of its samples, those written before
				    this object was made: by an earlier
				    collector (HELLO's WRITTEN) or by us
				    for its earlier connections */
	uint64_t n_connects;	 /* sessions opened so far */
	/* the kernel's uid of the client of its last session
	 * (proc_session_set_uid), not HELLO's word: whose its files are
	 * (--readers-group) */
	unsigned peer_uid;
	int has_bye;
	struct proc_bye bye; /* the last BYE */
};

/* ---- the registry ----------------------------------------------------- */

/* An empty registry whose processes intern into st (st outlives it), or
 * NULL (ENOMEM). */
struct procs *procs_new(struct symtab *st);
/* Frees every process. All sessions must have been closed. */
void procs_free(struct procs *reg);

/* Processes in the order they first connected; NULL at the end. */
struct proc *procs_first(const struct procs *reg);
struct proc *proc_next(const struct proc *p);
/* Live processes held. */
size_t procs_len(const struct procs *reg);
/* Counters over the registry's whole life, removed processes included. */
uint64_t procs_n_seen(const struct procs *reg);
uint64_t procs_total_samples(const struct procs *reg);
/* Of procs_total_samples, the block and mutex records' contentions. */
uint64_t procs_total_waits(const struct procs *reg);
uint64_t procs_total_lost(const struct procs *reg);

/*
 * Processes that said they are not profiled (a HELLO with WIRE_H_REFUSED),
 * grouped by their reason: the first PROCS_REFUSED_KINDS distinct reasons
 * are kept (truncated to PROCS_REFUSED_LEN - 1 bytes), later ones are
 * counted together as "other reasons". why must already be printable
 * (log_printable). Loop thread, like the rest of the registry.
 */
#define PROCS_REFUSED_KINDS 8
#define PROCS_REFUSED_LEN 160
void procs_note_refused(struct procs *reg, const char *why);
/* Refused processes over the registry's life. */
uint64_t procs_n_refused(const struct procs *reg);
/* The i-th reason (i from 0) and how many processes gave it; NULL past
 * the last. */
const char *procs_refused_reason(const struct procs *reg, size_t i,
				 uint64_t *n);

/* Unlinks and frees p, which must have no session. When the registry
 * becomes empty the shared symtab is cleared (nothing refers to it). */
void procs_remove(struct procs *reg, struct proc *p);

/* With a timeline (timeline.h, --timeline), every sample accepted from
 * now on is also appended to tl, in arrival order. The timeline holds
 * node ids, so compaction is off while one is set. tl outlives reg's use
 * of it; NULL turns it off. */
struct timeline;
void procs_set_timeline(struct procs *reg, struct timeline *tl);

/* Compacts the shared symtab when it is worth it: when it holds at least
 * PROCS_GC_MIN_ENTRIES entries and more than twice what the processes
 * can still refer to (an upper bound kept as definitions arrive and
 * processes go), or, with at_boundary set (a --period boundary, a quiet
 * moment), when it has grown to twice what the last compaction kept.
 * Each compaction frees at least half the table, so its O(entries) cost
 * is paid for by the definitions that made the garbage. Returns 1 if it
 * compacted, 0 if not (or if memory was short: then nothing changed). */
#define PROCS_GC_MIN_ENTRIES 20000
int procs_maybe_compact(struct procs *reg, int at_boundary);
/* Compacts now: marks every id held by processes, their threads, their
 * aggregates and their sessions' id maps, rebuilds the symtab and
 * renumbers them all. 0 or -ENOMEM (nothing changed). */
int procs_compact(struct procs *reg);
/* Entries the processes can refer to at most (see procs_maybe_compact). */
uint64_t procs_refs_bound(const struct procs *reg);

/* ---- sessions: one per connection ----------------------------------- */

/* Starts a session for a validated HELLO: finds the process with the
 * same (pid, start_unix_ns), or creates it. *out is owned by the caller
 * until proc_session_close. *resumed is set to 1 when an existing process
 * continues. 0 or -ENOMEM (err says so). */
int proc_session_open(struct procs *reg, const struct proc_hello *h,
		      struct proc_session **out, int *resumed, char *err);
/* Written samples (see the top). proc_mark_written says that p's samples
 * received so far are in a profile now on disk: each open session's
 * count of them becomes its count to acknowledge, and the registry's
 * written hook, if set, is called with each session's owner (conn.c's
 * connection, proc_session_set_owner) so that it can send CTL_WRITTEN.
 * proc_session_to_ack gives the count to acknowledge (1) if it grew since
 * proc_session_acked was last told it went out, else 0. */
#define PROCS_TOMBS 256
void proc_mark_written(struct proc *p);
void procs_set_written_hook(struct procs *reg,
			    void (*fn)(void *arg, void *owner), void *arg);
void proc_session_set_owner(struct proc_session *s, void *owner);
/* The uid of s's client (the kernel's, SO_PEERCRED), whose share its
 * definitions are charged to (procs_set_def_limits), and the process's
 * peer_uid. Before any definition. */
void proc_session_set_uid(struct proc_session *s, unsigned uid);
/* Calls fn(arg, owner) for the owner of each open session of every
 * process with this pid but except (one pid, one live connection:
 * conn.c ends those whose process has exited). */
void procs_each_owner(struct procs *reg, uint64_t pid,
		      const struct proc *except,
		      void (*fn)(void *arg, void *owner), void *arg);
int proc_session_to_ack(const struct proc_session *s, uint64_t *n);
void proc_session_acked(struct proc_session *s, uint64_t n);

/* Ends the session and frees it. Returns its process if no other session
 * holds it any more (the caller decides whether to write and remove it),
 * else NULL. */
struct proc *proc_session_close(struct proc_session *s);
struct proc *proc_session_proc(const struct proc_session *s);
/* Samples and lost samples received on this session. */
uint64_t proc_session_samples(const struct proc_session *s);
uint64_t proc_session_lost(const struct proc_session *s);

/* Definitions. Each returns 0, -EPROTO (err says which rule the frame
 * broke; nothing changed), or -ENOMEM. err has ERR_LEN bytes. */
int proc_def_string(struct proc_session *s, uint64_t id, const uint8_t *p,
		    size_t len, char *err);
int proc_def_function(struct proc_session *s, uint64_t id, uint64_t name,
		      uint64_t system_name, uint64_t filename,
		      uint64_t start_line, char *err);
int proc_def_location(struct proc_session *s, uint64_t id, uint64_t function,
		      uint64_t line, char *err);
/* PYPROF_NATIVE: a loaded object's segment (wire.h's MAPPING), and a
 * native location in one (ADDRESS; a location id, like LOCATION's). The
 * address is named there and then from the mapped file's symbols
 * (elfsym.h: may read the file the first time, some milliseconds). */
int proc_def_mapping(struct proc_session *s, uint64_t id, uint64_t start,
		     uint64_t limit, uint64_t offset, uint64_t filename,
		     const uint8_t *build_id, size_t build_id_len, char *err);
int proc_def_address(struct proc_session *s, uint64_t id, uint64_t mapping,
		     uint64_t addr, char *err);
int proc_def_node(struct proc_session *s, uint64_t id, uint64_t parent,
		  uint64_t location, char *err);
int proc_def_thread(struct proc_session *s, uint64_t ref, uint64_t tid,
		    uint64_t name, char *err);
/* A label set (wire.h's LABELS): kv holds n (key, value) pairs of the
 * connection's string ids, key first. Refused (-EPROTO): an id out of
 * order, no pair or more than WIRE_MAX_LABELS, an undefined string, an
 * empty key, a key given twice or one of WIRE_RESERVED_LABELS. Each set
 * costs the budget 8 bytes a pair beyond the fixed cost of a
 * definition. */
int proc_def_labels(struct proc_session *s, uint64_t id, const uint64_t *kv,
		    size_t n, char *err);

/* Samples, in two steps so that a SAMPLES frame is taken whole or not at
 * all: proc_check_samples validates records (call it on every record of
 * the frame first), proc_add_samples adds checked records. Record i of
 * the batch is reported as first_index + i. 0, -EPROTO or -ENOMEM.
 *
 * *clock_ns is the frame's running time: set it to base_ns before the
 * first batch of a frame; each record advances it by its dt_ns, the time
 * since the previous record (the library's encoder, preload/agent/agent.c,
 * writes deltas from record to record; wire.h leaves this implicit). */
int proc_check_samples(const struct proc_session *s,
		       const struct proc_sample *recs, size_t n,
		       uint64_t first_index, char *err);
int proc_add_samples(struct proc_session *s, uint64_t *clock_ns,
		     const struct proc_sample *recs, size_t n, char *err);

/* reason is enum wire_lost_reason. 0 or -EPROTO. */
int proc_add_lost(struct proc_session *s, uint64_t reason, uint64_t samples,
		  uint64_t value, char *err);
void proc_set_bye(struct proc_session *s, const struct proc_bye *bye);
/* A control reply or state (wire.h's CTL_REPLY, CTL_STATE) said whether
 * the process samples now, at period_ns (0: not said), since
 * since_mono_ns (its CLOCK_MONOTONIC; 0: not said); came_dormant: its
 * HELLO said it was not sampling. The period its samples are taken at
 * becomes the profile's; the first "on" of a process that came dormant
 * is where its profile's time begins (proc_info's from_unix_ns). */
void proc_session_sampling(struct proc_session *s, int on, uint64_t period_ns,
			   uint64_t since_mono_ns, int came_dormant);

/* HEAP frames (wire.h), in two steps like SAMPLES: proc_check_heap
 * validates the records (kind known; an ALLOC's node and thread defined,
 * size > 0, address not 0, and an ALLOC_LABELS's set defined; a FREE's
 * address not 0), proc_add_heap applies
 * checked ones to the process's heap profile (heapagg.h) at rate. 0,
 * -EPROTO or -ENOMEM. */
struct proc_heap_rec {
	uint64_t kind;			   /* enum wire_heap_kind */
	uint64_t node, thread, size, addr; /* ALLOC; FREE: addr only */
	uint64_t labels;		   /* ALLOC_LABELS: the set */
	uint64_t n, bytes;		   /* LOST */
};
int proc_check_heap(const struct proc_session *s,
		    const struct proc_heap_rec *recs, size_t n,
		    uint64_t first_index, char *err);
int proc_add_heap(struct proc_session *s, uint64_t rate,
		  const struct proc_heap_rec *recs, size_t n, char *err);
/* HEAP_SNAPSHOT seq: the process asks for an in-use profile as of now;
 * output.c writes it (procs_next_snapshot). Not for a process without
 * heap data (nothing to show), nor within PROC_SNAP_MIN_NS of its last
 * snapshot (the library asks once a second at most; a flood of requests
 * would be a flood of files): those are skipped, logged once per process
 * at info, then at debug. 0 or -EPROTO (seq 0). */
#define PROC_SNAP_MIN_NS 500000000ull
#define PROC_SNAP_MIN_TEXT "0.5 s"

int proc_heap_snapshot(struct proc_session *s, uint64_t seq, char *err);
/* A process with a snapshot asked for and not written yet (its seq in
 * *seq, cleared), or NULL. */
struct proc *procs_next_snapshot(struct procs *reg, uint64_t *seq);
/* The process's heap profile, NULL if it sent no HEAP frame. */
struct heapagg;
const struct heapagg *proc_heap(const struct proc *p);

/* The highest heap in use of any process over the registry's life
 * (heapagg_life_peak: unbiased bytes; the collector's clock when the
 * frame that reached it came), its process's pid and start, and how many
 * processes sent heap data; 0 if none did (the rest untouched), else 1.
 * For `pyprof record`'s last line (the --summary file). */
struct procs_heap_peak {
	uint64_t bytes, unix_ns, pid, start_unix_ns;
	uint64_t n_procs;
};
int procs_heap_peak(const struct procs *reg, struct procs_heap_peak *out);

/* ---- reading a process (pprof.c, collector.c) ------------------------- */

const struct proc_info *proc_info(const struct proc *p);
const struct agg *proc_agg(const struct proc *p);
/* Threads are numbered 1..proc_n_threads; the agg's thread field is this
 * number. */
uint32_t proc_n_threads(const struct proc *p);
void proc_thread(const struct proc *p, uint32_t idx, uint64_t *tid,
		 uint32_t *name_sid);
/* Lost samples in the current window for a reason in 1..PROC_LOST_MAX. */
void proc_lost(const struct proc *p, unsigned reason, uint64_t *samples,
	       uint64_t *value);
/* Counts samples the collector lost itself (reason PROC_LOST_NOT_WRITTEN)
 * against p: in its window, so that its next profile shows them, and in
 * the totals (procs_total_lost). */
void proc_count_lost(struct proc *p, unsigned reason, uint64_t samples,
		     uint64_t value);
/* Adds to p's window lost samples already counted in the totals: those
 * of a window that was itself not written, carried to the next. */
void proc_carry_lost(struct proc *p, unsigned reason, uint64_t samples,
		     uint64_t value);
/* The same for a process the registry no longer holds: the totals only. */
void procs_count_lost(struct procs *reg, uint64_t samples);
/* Whether a connection still feeds p. */
int proc_is_live(const struct proc *p);
/* Empties p's aggregate and window lost counts and starts its next window
 * at start_unix_ns; threads, symbols and sessions are kept. */
void proc_window_reset(struct proc *p, uint64_t start_unix_ns);
/* The process's last sign of life in Unix ns: its latest sample or BYE
 * end time converted with HELLO's clock pair, else when the collector
 * last heard from it. */
uint64_t proc_end_unix_ns(const struct proc *p);

/* ---- taps and copies (HTTP profile windows, window.h) ------------------ */

/* A tap sees every sample and lost count as it is accepted, and every
 * process just before it is freed, so that window.c can keep its own
 * aggregates of what arrives between two instants. t_mono_ns is the
 * sample's CLOCK_MONOTONIC time as the library took it; node, thread,
 * flags and labels are as in the process's own aggregate (agg.h). One tap per
 * registry; NULL turns it off. The callbacks must not change the
 * registry. */
struct procs_tap {
	void (*sample)(void *arg, const struct proc *p, uint32_t node,
		       uint32_t thread, uint32_t flags, uint32_t labels,
		       uint64_t count, uint64_t value, uint64_t t_mono_ns);
	void (*lost)(void *arg, const struct proc *p, unsigned reason,
		     uint64_t samples, uint64_t value);
	void (*gone)(void *arg, const struct proc *p);
	void *arg;
};
void procs_set_tap(struct procs *reg, const struct procs_tap *tap);

/* The CLOCK_MONOTONIC time of p's latest sample (or BYE), 0 if none. */
uint64_t proc_last_mono_ns(const struct proc *p);

/* A copy: a process object outside the registry's list, with src's
 * facts (HELLO's strings, mode, rate) and an empty aggregate, that
 * pprof_build reads like any process. Its ids stay valid however long it
 * lives: compactions mark and renumber copies too, and the symtab is
 * not cleared while one exists, even after src is gone. NULL (ENOMEM). */
struct proc *proc_copy_new(const struct proc *src);
/* Adds a sample of src (tapped, see above) to the copy made from it;
 * src's threads are copied as needed so that thread numbers mean the same
 * in both. 0 or -ENOMEM (nothing added). */
int proc_copy_add(struct proc *copy, const struct proc *src, uint32_t node,
		  uint32_t thread, uint32_t flags, uint32_t labels,
		  uint64_t count, uint64_t value, uint64_t t_mono_ns);
void proc_copy_add_lost(struct proc *copy, unsigned reason,
			uint64_t samples, uint64_t value);
/* Copies what src learnt since the copy was made (a BYE's achieved
 * rate and native-stack counts, which the profile's comments show). */
void proc_copy_sync(struct proc *copy, const struct proc *src);
/* Frees a copy. NULL is fine. */
void proc_copy_free(struct proc *copy);

#endif /* PYPROF_PROC_H */
