/*
 * wire.h - the pyprof wire protocol, and nothing else.
 *
 * This is the only contract between libpyprof.so (preload/) and the
 * collector (collector/). The library encodes, the collector decodes and
 * validates; both use the inline codec at the bottom of this file. Each
 * frame kind has one encoder, in pyprof/wire_frames.h (the library, the
 * collector and pyprof ctl write with it), and one decoder, in
 * collector/daemon/decode.c (HELLO and BYE: hello.c). Nothing here
 * allocates or touches global state, so both sides may use it from any
 * thread (the library uses it on its agent thread only, never in a signal
 * handler).
 *
 * Stream. A client connects to the collector's Unix stream socket and sends
 * a sequence of frames; the first is HELLO, exactly once. Every frame is
 *
 *     u32 little-endian  word = type | (payload_len << 8)
 *     payload_len bytes  payload
 *
 * so a frame is at most 4 + WIRE_MAX_PAYLOAD bytes. The payload is a
 * sequence of unsigned LEB128 varints (at most 10 bytes, value < 2^64) and
 * byte strings (varint length, then the bytes). A frame whose payload has
 * bytes left over, or runs out early, is malformed.
 *
 * Definitions before use. Strings, functions, locations, stack nodes and
 * threads are defined once per connection and then referred to by id. Ids
 * of each kind are dense and assigned in order: the first STRING defines id
 * 1, the next id 2, and so on (THREAD may also redefine an existing ref, to
 * rename it). Id 0 means "none" where a field allows it. A definition with
 * any other id, or a reference to an id not yet defined, is a protocol error.
 * A reconnecting client starts over: HELLO, then every definition again from
 * id 1 (the library keeps its ids for the life of the process, so this is a
 * replay), then new data.
 *
 * Native frames (PYPROF_NATIVE). A MAPPING describes one executable
 * segment of a loaded object (the main program, a shared library, an
 * extension module loaded with dlopen): where it is mapped, the file
 * offset it was mapped from, the file's path and its GNU build id. An
 * ADDRESS is a location like LOCATION's, but named by an address inside a
 * mapping instead of a function and line: the collector finds the name
 * in the file's ELF symbol tables. LOCATION and ADDRESS share one id
 * space: the next location id is the next one of either frame. A client
 * sends a mapping before the first ADDRESS that names it, and new mappings
 * as objects are loaded (after dlopen); a new object at an old address is
 * a new mapping (a new id).
 *
 * Stacks are a trie. A NODE is (parent node, location): parent 0 is the
 * root, and a parent must already be defined, so the trie has no cycles. A
 * sample names its leaf node; the stack is the path from that leaf to the
 * root (pprof order: leaf first). Deep recursion that varies only at the
 * leaf costs one new node per new leaf.
 *
 * Any malformed frame ends the connection: the collector logs why, drops
 * that client's connection, and keeps the data it had already accepted.
 *
 * Worked example: the bytes of a STRING frame defining id 1 = "main".
 *
 *     02 06 00 00    type 2 (STRING), payload_len 6
 *     01             id 1
 *     04 6d 61 69 6e length 4, "main"
 *
 * And an ADDRESS defining location id 7 at 0x401236 in mapping 2:
 *
 *     0b 06 00 00    type 11 (ADDRESS), payload_len 6
 *     07 02          id 7, mapping 2
 *     b6 a4 80 02    address 0x401236
 *
 * Control. The same connection also carries control frames,
 * in both directions, in the same frame format (u32 word = type |
 * payload_len << 8, then the payload). Their payloads are tagged fields,
 * as HELLO's (no magic): varint key = tag << 1 | kind, kind 0 a varint,
 * kind 1 a byte string; unknown tags are skipped; every control payload is
 * at most WIRE_MAX_CTL_PAYLOAD bytes.
 *   collector -> library   CTL_START, CTL_STOP, CTL_FLUSH, CTL_STATUS,
 *                          CTL_WRITTEN (types 32..39: a library reads
 *                          only these)
 *   library -> collector   CTL_REPLY (one per command, same REQ id, sent
 *                          after every sample taken before the command
 *                          was handled) and CTL_STATE (a change nobody
 *                          asked for on this connection: the toggle
 *                          signal, a lease running out)
 *   controller -> collector CTL_REQUEST, as the first and only frame of a
 *                          connection that sends no HELLO (pyprof ctl)
 *   collector -> controller CTL_ANSWER per process, then CTL_DONE
 * A library that reads a frame of another type, or a malformed one, drops
 * the connection (and reconnects), as the collector does.
 *
 * Written samples. A library whose HELLO carries WRITTEN (even 0) also
 * takes CTL_WRITTEN: the collector tells it, after writing a profile that
 * holds them, how many samples it received on this connection are now on
 * disk (C_WRITTEN, a running total for the connection; no reply). The
 * library adds the last such count of each connection it had, and sends the
 * sum as WRITTEN in the HELLO of its next one. So a collector that a
 * process reaches after another one (restarted, or killed) knows which of
 * the samples counted in BYE's SAMPLES the earlier one had already written,
 * and counts as lost only the others.
 *
 * Worked example: the collector asks for CPU sampling at 200 Hz for 3 s,
 * request 5:
 *
 *     20 0c 00 00    type 32 (CTL_START), payload_len 12
 *     02 05          REQ (tag 1, varint) = 5
 *     04 00          MODE (tag 2) = cpu
 *     06 c0 96 b1 02 PERIOD_NS (tag 3) = 5000000
 *     0c b8 17       LEASE_MS (tag 6) = 3000
 *
 * and the library answers that it samples, request 5, status OK:
 *
 *     10 06 00 00    type 16 (CTL_REPLY), payload_len 6
 *     02 05          REQ = 5
 *     10 00          STATUS (tag 8) = OK
 *     12 01          SAMPLING (tag 9) = 1
 */
#ifndef PYPROF_WIRE_H
#define PYPROF_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyprof/leb128.h"

#define WIRE_MAGIC "PYPROF" /* first bytes of HELLO's payload */
#define WIRE_MAGIC_LEN 6
#define WIRE_VERSION 1

/* Hard limits. The collector rejects anything beyond them. */
#define WIRE_HDR_LEN 4
#define WIRE_MAX_PAYLOAD (1u << 20) /* 1 MiB */
#define WIRE_MAX_STRING 65536	    /* bytes in one string */
#define WIRE_MAX_IDS (1u << 24)	    /* ids of one kind on one connection */
#define WIRE_MAX_DEPTH 8192	    /* nodes from a leaf to the root */
#define WIRE_MAX_ARGS 1024	    /* argv entries in HELLO */
#define WIRE_MAX_BUILD_ID 64	    /* bytes of a MAPPING's build id */

enum wire_type {
	WIRE_HELLO = 1,		 /* tagged fields, see below                         */
	WIRE_STRING = 2,	 /* id, bytes (UTF-8)                                */
	WIRE_FUNCTION = 3,	 /* id, name sid, system_name sid, filename sid,
	                      start_line                                       */
	WIRE_LOCATION = 4,	 /* id, function id, line                            */
	WIRE_NODE = 5,		 /* id, parent node id (0 = root), location id       */
	WIRE_THREAD = 6,	 /* ref, os tid, name sid (0 = unnamed)              */
	WIRE_SAMPLES = 7,	 /* base_ns (CLOCK_MONOTONIC of the first record),
	                      then records until the payload ends: node,
	                      thread ref, dt_ns (time since the previous
	                      record of this frame; 0 for the first), count,
	                      value (ns), flags, and the opcode if flags has
	                      WIRE_SF_OPCODE                                  */
	WIRE_LOST = 8,		 /* reason, samples, value                           */
	WIRE_BYE = 9,		 /* tagged fields: clean end of the process's data   */
	WIRE_MAPPING = 10,	 /* id, start, limit (start < limit: [start, limit)
	                      mapped), file offset of start, filename sid
	                      (absolute path, or a name in brackets such as
	                      "[vdso]" for memory without a file), build id
	                      (bytes, 0 to WIRE_MAX_BUILD_ID; empty if none)  */
	WIRE_ADDRESS = 11,	 /* id (a location id: shared with LOCATION), mapping
	                      id (0 = in no known mapping), address (in the
	                      process; within the mapping if there is one). For
	                      a caller's frame the client sends the return
	                      address minus 1, so that it falls inside the call */
	WIRE_HEAP = 12,		 /* heap profiling (PYPROF_HEAP_RATE): the sampling
	                      rate in bytes, then records until the payload
	                      ends, each a kind (enum wire_heap_kind) and its
	                      fields; see "Heap profiles" below              */
	WIRE_HEAP_SNAPSHOT = 13, /* seq (1, 2, ...): the process's heap as of
	                      this point in the stream; the collector writes
	                      an in-use profile of it (a snapshot)            */
	WIRE_LABELS = 14,	 /* id, then (key sid, value sid) pairs until the
	                      payload ends: one label set; see "Labels"      */
	WIRE_TYPE_MAX = 14,

	/* control (see the top of this file); tagged fields, enum
	 * wire_ctl_tag. Library -> collector: */
	WIRE_CTL_REPLY = 16, /* REQ, STATUS, MSG, then the state fields   */
	WIRE_CTL_STATE = 17, /* the state fields, unasked                 */
	/* controller -> collector: */
	WIRE_CTL_REQUEST = 18, /* VERB, PID (0 = all), LEASE_MS (0 = until
	                          stopped), and START's settings            */
	WIRE_CTL_FIRST = 16,
	WIRE_CTL_LAST = 18,
	/* collector -> library: */
	WIRE_CTL_START = 32,  /* REQ, then what differs from the library's
	                          own settings: MODE, PERIOD_NS, HEAP_RATE,
	                          NATIVE, WAITS_NS; LEASE_MS (0 or absent:
	                          until CTL_STOP). Sampling on with these settings
	                          until the lease ends, CTL_STOP, or the
	                          connection ends; then back to the
	                          library's own state (PYPROF_START, toggle)  */
	WIRE_CTL_STOP = 33,   /* REQ, HARD: 0 ends what CTL_START started
	                          (back to the library's own state), 1 also
	                          turns the library's own sampling off        */
	WIRE_CTL_FLUSH = 34,  /* REQ: send every sample taken so far        */
	WIRE_CTL_STATUS = 35, /* REQ: say what you do                      */
	/* collector -> controller: */
	WIRE_CTL_ANSWER = 36, /* PID, COMM, and the library's reply fields  */
	WIRE_CTL_DONE = 37,   /* N answers sent, MSG (if nothing matched)   */
	/* collector -> library, to a library whose HELLO had WRITTEN: */
	WIRE_CTL_WRITTEN = 38, /* WRITTEN: samples received on this
	                          connection that are in a written profile   */
	WIRE_CTL_DOWN_FIRST = 32,
	WIRE_CTL_DOWN_LAST = 39
};

#define WIRE_MAX_CTL_PAYLOAD 4096

/* Control frames' tagged fields (one tag space for all of them). */
enum wire_ctl_tag {
	WIRE_C_REQ = 1,		   /* varint: request id, echoed by the reply    */
	WIRE_C_MODE = 2,	   /* varint: enum wire_mode                     */
	WIRE_C_PERIOD_NS = 3,	   /* varint: sampling period, ns                */
	WIRE_C_HEAP_RATE = 4,	   /* varint: bytes between heap samples, 0 off  */
	WIRE_C_NATIVE = 5,	   /* varint: 1 to merge native stacks           */
	WIRE_C_LEASE_MS = 6,	   /* varint: how long, ms (0 = until stopped)   */
	WIRE_C_HARD = 7,	   /* varint: CTL_STOP's kind                    */
	WIRE_C_STATUS = 8,	   /* varint: enum wire_ctl_status               */
	WIRE_C_SAMPLING = 9,	   /* varint: 1 if sampling now                  */
	WIRE_C_ORIGIN = 10,	   /* varint: enum wire_ctl_origin               */
	WIRE_C_ACHIEVED_NS = 11,   /* varint: period achieved, if it differs   */
	WIRE_C_SAMPLES = 12,	   /* varint: samples taken since the start      */
	WIRE_C_SIGNALS = 13,	   /* varint: sampling signals received, ever    */
	WIRE_C_ARMED = 14,	   /* varint: threads with a timer armed         */
	WIRE_C_LEASE_LEFT_MS = 15, /* varint: of the current lease           */
	WIRE_C_MSG = 16,	   /* bytes: a note for people (what was not
	                          done as asked, and why)                    */
	WIRE_C_PID = 17,	   /* varint                                    */
	WIRE_C_VERB = 18,	   /* varint: enum wire_ctl_verb                 */
	WIRE_C_COMM = 19,	   /* bytes: process name                        */
	WIRE_C_SINCE_NS = 20,	   /* varint: CLOCK_MONOTONIC when sampling last
	                          started (or stopped, when off)             */
	WIRE_C_N = 21,		   /* varint: CTL_DONE's count                   */
	WIRE_C_WRITTEN = 22,	   /* varint: CTL_WRITTEN's count                */
	/* varint: block and mutex profiles' rate, ns (CTL_START: on at this
	 * rate for the request; replies: as now, 0 off) */
	WIRE_C_WAITS_NS = 23
};

enum wire_ctl_verb {
	WIRE_VERB_START = 1,
	WIRE_VERB_STOP = 2,
	WIRE_VERB_FLUSH = 3,
	WIRE_VERB_STATUS = 4
};

enum wire_ctl_status {
	WIRE_CTL_OK = 0,      /* done as asked                              */
	WIRE_CTL_PARTIAL = 1, /* done, but not all as asked (MSG says what:
	                          a mode or native stacks it cannot do)      */
	WIRE_CTL_REFUSED = 2, /* not done (MSG says why); state unchanged   */
	WIRE_CTL_NO_REPLY = 3 /* collector only: the process did not answer
	                          in time, or went away                      */
};

/* Why a library samples (or not). */
enum wire_ctl_origin {
	WIRE_ORIGIN_OFF = 0,	/* not sampling                            */
	WIRE_ORIGIN_OWN = 1,	/* its own state: PYPROF_START=on, the
	                             toggle signal                           */
	WIRE_ORIGIN_COMMAND = 2 /* a CTL_START's, for its lease            */
};

/*
 * Heap profiles. A sampled allocation stands for 1/(1 - exp(-size/rate))
 * allocations of its size (each byte allocated is equally likely to be a
 * sample point; rate is the mean distance between them): the collector
 * scales each one by that, as Go's runtime/pprof does. A block stays in
 * use from its ALLOC record until a FREE record with its address; the
 * library sends FREE only for blocks it sampled and never reuses an
 * address before its FREE (an ALLOC for an address still in use means the
 * FREE was lost: the collector drops the old block). Records keep their
 * order within and across HEAP frames.
 *
 *   ALLOC  node (the allocating stack, as a sample's), thread ref, size
 *          in bytes (> 0), address
 *   FREE   address
 *   LOST   allocations sampled but not recorded (the library's table of
 *          sampled blocks, or its ring, was full), their bytes
 *
 * Worked example: a HEAP frame at rate 524288 (512 KiB) with one ALLOC of
 * 1000000 bytes at 0x7f0000001000 by node 5 on thread 1, then its FREE:
 *
 *     0c 18 00 00              type 12 (HEAP), payload_len 24
 *     80 80 20                 rate 524288
 *     01 05 01 c0 84 3d        ALLOC, node 5, thread 1, size 1000000,
 *     80 a0 80 80 80 e0 1f       address 0x7f0000001000
 *     02 80 a0 80 80 80 e0 1f  FREE, address 0x7f0000001000
 */
enum wire_heap_kind {
	WIRE_HEAP_ALLOC = 1,
	WIRE_HEAP_FREE = 2,
	WIRE_HEAP_LOST = 3,
	WIRE_HEAP_ALLOC_LABELS = 4 /* ALLOC's fields, then a LABELS set id */
};

/*
 * Labels. A LABELS frame defines one label set: its id (dense from 1, as
 * every kind), then key and value string ids in pairs, at most
 * WIRE_MAX_LABELS pairs, at least one. Keys are distinct within a set and
 * none is one of the names the collector writes itself
 * (WIRE_RESERVED_LABELS); values may be any string, the empty one
 * included. A set is what the program said was in force (pyprof.labels(),
 * the asyncio task): the collector writes each pair as a pprof string
 * label on every sample that names the set, beside its own labels. A
 * SAMPLES record names a set with WIRE_SF_LABELS, a HEAP allocation with
 * WIRE_HEAP_ALLOC_LABELS; a record without one had no labels.
 *
 * Worked example: set 1 = {endpoint: "/api"} with "endpoint" string 4
 * and "/api" string 5, then a SAMPLES record that names it:
 *
 *     0e 03 00 00    type 14 (LABELS), payload_len 3
 *     01 04 05       id 1, key 4, value 5
 *     ... node, thread, dt_ns, count, value,
 *     80 01 01       flags WIRE_SF_LABELS (0x80), set 1
 */
/* 64 from the program (the module's MAX_LABELS), one more for task */
#define WIRE_MAX_LABELS 65
#define WIRE_RESERVED_LABELS                                               \
	"pid", "thread_id", "thread_name", "process", "command", "native", \
		"gil", "opcode", "cpu_state"

/* Whether the key k[0..n) is one of WIRE_RESERVED_LABELS: the one check,
 * for the library's agent and the collector alike. */
static inline int wire_label_reserved(const char *k, size_t n)
{
	static const char *const reserved[] = { WIRE_RESERVED_LABELS };
	for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
		if (strlen(reserved[i]) == n && !memcmp(reserved[i], k, n))
			return 1;
	return 0;
}

/*
 * HELLO and BYE payloads: the magic (HELLO only), then fields until the
 * payload ends, each as varint key = tag << 1 | kind, with kind 0 a varint
 * value and kind 1 a byte string. Unknown tags are skipped, so fields can be
 * added without a new protocol version. A tag may repeat only where noted.
 */
enum wire_hello_tag {
	WIRE_H_VERSION = 1,	  /* varint: WIRE_VERSION (required, first)   */
	WIRE_H_PID = 2,		  /* varint (required)                        */
	WIRE_H_PPID = 3,	  /* varint                                   */
	WIRE_H_START_UNIX_NS = 4, /* varint: process start, Unix epoch ns     */
	WIRE_H_START_MONO_NS = 5, /* varint: the same instant, CLOCK_MONOTONIC */
	WIRE_H_MODE = 6,	  /* varint: enum wire_mode                   */
	WIRE_H_PERIOD_NS = 7,	  /* varint: sampling period asked for        */
	WIRE_H_MAX_DEPTH = 8,	  /* varint                                   */
	WIRE_H_PYVERSION = 9,	  /* bytes: e.g. "3.11.7"                     */
	WIRE_H_EXE = 10,	  /* bytes: /proc/self/exe                    */
	WIRE_H_ARG = 11,	  /* bytes: one argv entry; repeats, in order */
	WIRE_H_CONN_SEQ = 12,	  /* varint: 0 first connection, 1.. reconnects */
	WIRE_H_UID = 13,	  /* varint: the client's uid (informative)   */
	WIRE_H_ACHIEVED_NS = 14,  /* varint: period actually achieved, if it
	                            differs from the one asked for           */
	WIRE_H_COMM = 15,	  /* bytes: process name (/proc/self/comm)   */
	WIRE_H_WRITTEN = 16,	  /* varint: samples that collectors said they
	                            wrote (CTL_WRITTEN) on this process's
	                            earlier connections, summed; sending it
	                            (0 on the first) asks for CTL_WRITTEN    */
	WIRE_H_SAMPLING = 20,	  /* varint: 1 if it samples as it connects, 0
	                            if dormant (PYPROF_START=off; control) */
	WIRE_H_REFUSED = 21	  /* bytes: this process is NOT profiled, and
	                            why, one line of printable text without
	                            a trailing period (e.g. "Python 3.16 is
	                            not supported"); see below            */
};

/*
 * A refused process. A process the library will not sample (a Python
 * version it has no layout for, a free-threaded or debug build, PyPy, a
 * layout check that failed) still connects once, from its constructor,
 * and sends one HELLO with VERSION, PID, PPID, PYVERSION when known, EXE,
 * COMM and REFUSED, then closes the connection: no other frame follows
 * (a collector drops a connection that sends any). It never reconnects;
 * when no collector listens nothing is retried. The collector opens no
 * profile for it, logs the reason and counts it (pyprof record's summary
 * prints "N process(es) not profiled: REASON (profiling off)"). A
 * collector that predates this tag skips it and sees an ordinary process
 * that sent no sample.
 */

enum wire_bye_tag {
	WIRE_B_SAMPLES = 1,	    /* varint: samples (sum of counts) the process
	                            queued in SAMPLES frames since it started;
	                            what a collector received less this is
	                            what was lost on the way                 */
	WIRE_B_LOST = 2,	    /* varint: samples the process itself lost,
	                            all reasons, since it started (each also
	                            sent in a LOST frame)                    */
	WIRE_B_END_MONO_NS = 3,	    /* varint: when the process stopped sampling */
	WIRE_B_HANDLER_N = 4,	    /* varint: signal handler runs measured     */
	WIRE_B_HANDLER_NS = 5,	    /* varint: total ns spent in those runs     */
	WIRE_B_FAULTS = 6,	    /* varint: guarded reads that faulted       */
	WIRE_B_ACHIEVED_NS = 7,	    /* varint: sampling period achieved, when it
	                            differs from the one asked for (CPU time
	                            per signal actually delivered)           */
	WIRE_B_NATIVE_UNMERGED = 8, /* varint: PYPROF_NATIVE samples whose
	                            native and Python stacks could not be
	                            merged (their stacks carry a marker)     */
	WIRE_B_CPU_SOURCE = 9	    /* varint: enum wire_cpu_source, what the
	                            last CPU-mode sampling counted with; absent
	                            in wall mode or if it never sampled     */
};

/* What measured CPU time (BYE's WIRE_B_CPU_SOURCE). A receiver shows an
 * unknown value as a number. */
enum wire_cpu_source {
	WIRE_CPU_TIMERS = 1,	 /* per-thread CPU timers: user + system time,
	                           at most one sample per kernel tick       */
	WIRE_CPU_PERF_USER = 2,	 /* perf_event task-clock counters of user
	                           time only: time in the kernel unsampled */
	WIRE_CPU_CLOCKS = 3,	 /* the threads' CPU clocks read from the
	                           library's own thread: user + system     */
	WIRE_CPU_PERF_CLOCK = 4, /* perf_event task-clock counters sampling
	                           the thread where it runs in user mode,
	                           the time it spent in the kernel since
	                           charged there from its CPU clock (samples
	                           flagged WIRE_SF_TIME_SYSTEM)            */
	WIRE_CPU_ONCPU = 5,	 /* the threads' CPU clocks read from the
	                           library's own thread, a thread charged
	                           where it is found running: user + system
	                           (perf_event_open refused)               */
	WIRE_CPU_OUTSIDE = 6	 /* never sent: pyprof's own, reading a
	                           process from outside (record --pid), a
	                           thread charged where the kernel says it
	                           is running: user + system               */
};

enum wire_mode {
	WIRE_MODE_CPU = 0,
	WIRE_MODE_WALL = 1
};

/* SAMPLES record flags; the collector turns them into labels. */
enum wire_sample_flag {
	WIRE_SF_TRUNCATED = 1u << 0, /* stack deeper than max_depth; the root
	                                side was cut and marked               */
	WIRE_SF_OFF_CPU = 1u << 1,   /* wall mode: thread was not running    */
	WIRE_SF_GIL = 1u << 2,	     /* thread held the GIL                  */
	WIRE_SF_GIL_KNOWN = 1u << 3, /* WIRE_SF_GIL is meaningful            */
	WIRE_SF_NATIVE = 1u << 4,    /* interrupted outside the interpreter  */
	WIRE_SF_NATIVE_KNOWN = 1u << 5,
	WIRE_SF_OPCODE = 1u << 6, /* one more varint follows the flags:
	                                the opcode byte executing in the
	                                innermost Python frame (as stored in
	                                the code, so 3.11+ shows specialized
	                                opcodes); names per version are the
	                                reader's business (PYPROF_OPCODES)  */
	WIRE_SF_LABELS = 1u << 7, /* one more varint follows (after the
	                                opcode, if any): the id of the LABELS
	                                set in force for this sample        */
	/* Waits (PYPROF_WAITS): the record is not a CPU or wall sample but
	 * a block or mutex event, count = contentions and value = delay in
	 * ns (already scaled for the sampling rate); with WIRE_SF_GIL and
	 * WIRE_SF_GIL_KNOWN the lock was the GIL (the stack then ends in a
	 * "[GIL]" frame). They go to the block and mutex profiles only. */
	WIRE_SF_WAIT_BLOCK = 1u << 8, /* the waiting thread's stack       */
	WIRE_SF_WAIT_MUTEX = 1u << 9, /* the holder's stack, charged with
	                                 the waiting during its hold      */
	/* CPU samples: what the time was spent on (the label time=...,
	 * docs/reading.md): with WIRE_SF_TIME_KNOWN, WIRE_SF_TIME_SYSTEM
	 * for the kernel, else WIRE_SF_TIME_NATIVE for C called from
	 * Python, else the interpreter (python). */
	WIRE_SF_TIME_KNOWN = 1u << 10,
	WIRE_SF_TIME_NATIVE = 1u << 11,
	WIRE_SF_TIME_SYSTEM = 1u << 12
};

/* Either wait flag: the record is a block or mutex event. */
#define WIRE_SF_WAITS (WIRE_SF_WAIT_BLOCK | WIRE_SF_WAIT_MUTEX)

/* LOST reasons: why samples never became stacks. */
enum wire_lost_reason {
	WIRE_LOST_RING_FULL = 1, /* the handler found no room             */
	WIRE_LOST_FAULT = 2,	 /* a guarded read faulted mid-walk       */
	WIRE_LOST_BUFFER = 3,	 /* the agent's outgoing buffer was full,
	                              or the collector was away too long    */
	WIRE_LOST_INVALID = 4,	 /* the stack failed validation           */
	WIRE_LOST_NO_THREAD = 5, /* no Python thread state for the thread */
	WIRE_LOST_FD_CLOSED = 6, /* the program closed a thread's perf
	                              counter: its CPU time until the
	                              counter was opened again            */
	WIRE_LOST_REASON_MAX = 6
};

/* ---- codec ---------------------------------------------------------- */

/* A write cursor over caller-owned memory. On overflow it stops writing
 * and sets ok = 0; check ok once at the end. */
struct wire_out {
	uint8_t *p, *end;
	int ok;
};

static inline void wire_put_u8(struct wire_out *w, uint8_t v)
{
	if (w->p < w->end)
		*w->p++ = v;
	else
		w->ok = 0;
}

static inline void wire_put_varint(struct wire_out *w, uint64_t v)
{
	while (v >= 0x80) {
		wire_put_u8(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	wire_put_u8(w, (uint8_t)v);
}

static inline void wire_put_bytes(struct wire_out *w, const void *s, size_t n)
{
	wire_put_varint(w, n);
	if ((size_t)(w->end - w->p) < n) {
		w->ok = 0;
		w->p = w->end;
		return;
	}
	if (n) /* s may be NULL when n is 0: memcpy's arguments may not */
		memcpy(w->p, s, n);
	w->p += n;
}

static inline void wire_put_hdr_at(uint8_t *at, unsigned type, size_t len)
{
	uint32_t word = (uint32_t)type | ((uint32_t)len << 8);
	at[0] = (uint8_t)word;
	at[1] = (uint8_t)(word >> 8);
	at[2] = (uint8_t)(word >> 16);
	at[3] = (uint8_t)(word >> 24);
}

/* A tagged field (HELLO, BYE, control frames): key = tag << 1 | kind,
 * kind 0 a varint, 1 bytes. */
static inline void wire_put_tag_varint(struct wire_out *w, unsigned tag,
				       uint64_t v)
{
	wire_put_varint(w, (uint64_t)tag << 1);
	wire_put_varint(w, v);
}

static inline void wire_put_tag_bytes(struct wire_out *w, unsigned tag,
				      const void *s, size_t n)
{
	wire_put_varint(w, (uint64_t)tag << 1 | 1);
	wire_put_bytes(w, s, n);
}

/* Ends a frame of type whose payload w wrote from frame + WIRE_HDR_LEN on:
 * writes its header; returns its whole length (check w->ok first). */
static inline size_t wire_end_frame(uint8_t *frame, const struct wire_out *w,
				    unsigned type)
{
	size_t n = (size_t)(w->p - frame) - WIRE_HDR_LEN;
	wire_put_hdr_at(frame, type, n);
	return n + WIRE_HDR_LEN;
}

static inline void wire_get_hdr(const uint8_t *at, unsigned *type,
				size_t *len)
{
	uint32_t word = (uint32_t)at[0] | (uint32_t)at[1] << 8 |
			(uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
	*type = word & 0xff;
	*len = word >> 8;
}

/* A read cursor over one frame's payload. On malformed input it sets
 * ok = 0 and every later read returns 0 / NULL. */
struct wire_in {
	const uint8_t *p, *end;
	int ok;
};

static inline uint64_t wire_get_varint(struct wire_in *r)
{
	uint64_t v;
	size_t n = leb128_get_u(r->p, r->end, &v);
	if (n && leb128_fits_u64(r->p, n)) {
		r->p += n;
		return v;
	}
	r->ok = 0;
	r->p = r->end;
	return 0;
}

/* Returns a pointer into the payload (not NUL-terminated) and its length
 * in *n, or NULL with ok = 0 if it runs past the end or over max. */
static inline const uint8_t *wire_get_bytes(struct wire_in *r, size_t *n,
					    size_t max)
{
	uint64_t len = wire_get_varint(r);
	if (!r->ok || len > max || len > (uint64_t)(r->end - r->p)) {
		r->ok = 0;
		r->p = r->end;
		*n = 0;
		return NULL;
	}
	const uint8_t *s = r->p;
	r->p += len;
	*n = (size_t)len;
	return s;
}

static inline int wire_at_end(const struct wire_in *r)
{
	return r->p >= r->end;
}

#endif /* PYPROF_WIRE_H */
