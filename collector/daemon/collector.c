/*
 * collector.c - wiring of the collector (see collector.h): the listener,
 * client connections, who may connect, the signal fd, and the outputs
 * (output.h), on one loop.
 *
 * Connections are kept in a table indexed by fd, which is how shutdown
 * finds them all to drain. When a connection ends, its process may have no
 * connection left: output.c then writes what is due and frees it, or keeps
 * it for a merged profile.
 */
#include "daemon/collector.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/conn.h"
#include "daemon/control.h"
#include "common/fileio.h"
#include "common/readers.h"
#include "daemon/listener.h"
#include "common/log.h"
#include "common/path.h"
#include "common/pidring.h"
#include "common/loop.h"
#include "daemon/output.h"
#include "daemon/proc.h"
#include "pyprof/defaults.h"
#include "daemon/symtab.h"

#define ACCEPTS_PER_EVENT 64
#define ACCEPT_PAUSE_NS (100 * 1000000ull) /* after EMFILE and friends */
/* Descriptors kept for everything but clients: the epoll and signal fds,
 * the listener and its spare, HTTP, profiles being written, ELF files
 * read for native names. */
#define FD_RESERVE 64
#define SWEEP_NS 1000000000ull /* time-outs checked every second */
#define COLLECTOR_LOG_BUDGETS 16

struct collector {
	const struct collector_opts *opts;
	struct loop *loop;
	struct symtab *st;
	struct procs *reg;
	struct listener *lis;
	struct output *out;
	struct control *ctl;		 /* sampling on demand (control.h) */
	const struct collector_ext *ext; /* what main plugs in (collector.h) */
	struct collector_parts parts;	 /* lent to ext */
	int sigfd;
	struct conn **conns; /* by fd */
	size_t conns_cap;
	size_t n_conns;
	int failed;		/* the loop failed */
	struct pidring refused; /* recently refused pids: warn once each */
	size_t max_conns;	/* clients served at once */
	uint64_t n_shed;	/* turned away in the current burst, for want
				of descriptors (n_shed_fd) or of room */
	uint64_t n_shed_fd;
	uint64_t n_evicted; /* silent ones closed for newcomers, this burst */
	int stopping;	    /* asked to stop: waiting (--exit-grace) for the
				clients still connected to end */

	/* The connections of one uid but ours (--max-clients-per-user), of
	 * one pid (--max-clients-per-process); the uids and pids recently
	 * refused for their share (warn once each), and how many were
	 * since the last count logged. */
	size_t max_user;
	size_t max_proc;
	struct pidring share_refused;
	uint64_t n_share_refused;
	/* What clients of users other than ours and root's may log (log.h's
	 * budgets, one per uid, the least recently used reused) */
	struct {
		unsigned uid;
		uint64_t used_ns;
		struct log_budget b;
	} budgets[COLLECTOR_LOG_BUDGETS];
};

/* The log budget of a client's uid; NULL for ours and root's, whose
 * lines are not limited (the collector's own user may flood its own
 * log). */
static struct log_budget *budget_of(struct collector *c, unsigned uid)
{
	size_t lru = 0;
	if (uid == (unsigned)geteuid() || uid == 0)
		return NULL;
	for (size_t i = 0; i < COLLECTOR_LOG_BUDGETS; i++) {
		if (c->budgets[i].used_ns && c->budgets[i].uid == uid) {
			c->budgets[i].used_ns = loop_now_ns();
			return &c->budgets[i].b;
		}
		if (c->budgets[i].used_ns < c->budgets[lru].used_ns)
			lru = i;
	}
	/* a new uid: the least recently used slot, its count said first */
	if (c->budgets[lru].used_ns && c->budgets[lru].b.suppressed) {
		c->budgets[lru].b.refill_ns = 0; /* full: it may say so */
		log_budget_report(&c->budgets[lru].b);
	}
	memset(&c->budgets[lru], 0, sizeof(c->budgets[lru]));
	c->budgets[lru].uid = uid;
	c->budgets[lru].used_ns = loop_now_ns() | 1;
	snprintf(c->budgets[lru].b.who, sizeof(c->budgets[lru].b.who),
		 "uid %u", uid);
	return &c->budgets[lru].b;
}

/* ---- connections ------------------------------------------------------------ */

static void close_conn(struct collector *c, struct conn *conn)
{
	int fd = conn_fd(conn);
	struct proc *p;
	struct log_budget *was = log_charge(budget_of(c, conn_peer_uid(conn)));

	loop_del_fd(c->loop, fd);
	c->conns[fd] = NULL;
	c->n_conns--;
	p = conn_free(conn);
	if (p)
		output_proc_ended(c->out, p);
	if (c->stopping && c->n_conns == 0)
		loop_stop(c->loop); /* the last one waited for has ended */
	log_charge(was);
}

static void on_conn(struct loop *loop, int fd, uint32_t events, void *arg)
{
	struct collector *c = arg;
	/* what a client makes the collector log is charged to its user */
	struct log_budget *was =
		log_charge(budget_of(c, conn_peer_uid(c->conns[fd])));
	/* errors and hang-ups surface as read results */
	if ((events & EPOLLOUT) && conn_flush_out(c->conns[fd]) == 0)
		loop_mod_fd(loop, fd, EPOLLIN); /* control frames all sent */
	if (conn_read(c->conns[fd], 0))
		close_conn(c, c->conns[fd]);
	else
		output_snapshots(c->out); /* heap snapshots asked for */
	log_charge(was);
}

static int track_conn(struct collector *c, int fd, struct conn *conn)
{
	if ((size_t)fd >= c->conns_cap) {
		size_t cap = c->conns_cap ? c->conns_cap : 64;
		while (cap <= (size_t)fd)
			cap *= 2;
		struct conn **v = realloc(c->conns, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + c->conns_cap, 0,
		       (cap - c->conns_cap) * sizeof(*v));
		c->conns = v;
		c->conns_cap = cap;
	}
	c->conns[fd] = conn;
	c->n_conns++;
	return 0;
}

static void on_accept_resume(struct loop *loop, struct loop_timer *t,
			     void *arg)
{
	struct collector *c = arg;
	(void)t;
	loop_mod_fd(loop, listener_fd(c->lis), EPOLLIN);
}

/* listener_peer_served with our --allow-user and --allow-group. */
static int uid_allowed(const struct collector *c, uid_t uid, int fd)
{
	const struct collector_opts *o = c->opts;
	return listener_peer_served(fd, uid, o->allow_uids, o->n_allow_uids,
				    o->allow_gids, o->n_allow_gids);
}

static void refuse(struct collector *c, pid_t pid, uid_t uid)
{
	(pidring_seen(&c->refused, pid) ? log_debug : log_warn)(
		"refused client pid %d: uid %u is not ours (%u)%s", (int)pid,
		(unsigned)uid, (unsigned)geteuid(),
		c->opts->n_allow_uids || c->opts->n_allow_gids
			? " nor allowed by --allow-user or --allow-group"
			: " (see --allow-user, --allow-group)");
}

/* Whether a client of uid and pid (at connect) would take more than its
 * share of the connections: those of one user other than ours
 * (--max-clients-per-user), or of one of its processes
 * (--max-clients-per-process; pid 0, a process in another pid namespace,
 * has no share of its own). Without shares one member's program could
 * hold every connection and turn everyone else's away; our own user's
 * programs are the collector's owner's, and have none. Returns the option
 * the client would pass, or NULL. */
static const char *share_passed(const struct collector *c, uid_t uid,
				pid_t pid)
{
	size_t n_uid = 0, n_pid = 0;

	if (uid == geteuid())
		return NULL;
	for (size_t fd = 0; fd < c->conns_cap; fd++) {
		const struct conn *conn = c->conns[fd];
		if (!conn)
			continue;
		n_uid += conn_peer_uid(conn) == (unsigned)uid;
		n_pid += pid && conn_peer_pid(conn) == pid;
	}
	if (n_uid >= c->max_user)
		return "--max-clients-per-user";
	if (pid && n_pid >= c->max_proc)
		return "--max-clients-per-process";
	return NULL;
}

/* Whether the other end of fd has hung up (what it sent may still wait
 * to be read). */
static int hung_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP));
}

/* share_passed, once the connections of uid or pid whose other end hung
 * up are read and closed: a program that connects, says its piece and
 * closes, again and again, holds none of them, though the loop has not
 * read their end yet. */
static const char *over_share(struct collector *c, uid_t uid, pid_t pid)
{
	if (!share_passed(c, uid, pid))
		return NULL;
	for (size_t fd = 0; fd < c->conns_cap; fd++) {
		struct conn *conn = c->conns[fd];
		if (conn &&
		    (conn_peer_uid(conn) == (unsigned)uid ||
		     (pid && conn_peer_pid(conn) == pid)) &&
		    hung_up((int)fd) && conn_read(conn, 1))
			close_conn(c, conn);
	}
	return share_passed(c, uid, pid);
}

/* A client over its share: closed, and said once per uid or pid while it
 * is among the last refused (a program retries every second); how many
 * were refused in all is said every second (on_sweep). */
static void refuse_share(struct collector *c, int fd, pid_t pid, uid_t uid,
			 const char *opt)
{
	int user = strcmp(opt, "--max-clients-per-user") == 0;
	/* uids and pids share the ring: a uid is noted as its negation */
	pid_t key = user ? -(pid_t)(uid & 0x3fffffff) - 1 : pid;

	(pidring_seen(&c->share_refused, key) ? log_debug : log_warn)(
		"client pid %d of uid %u turned away: %s has its share of "
		"the connections (%s %zu)",
		(int)pid, (unsigned)uid,
		user ? "its user" : "its process", opt,
		user ? c->max_user : c->max_proc);
	c->n_share_refused++;
	close(fd);
}

/* At the cap: closes the connection that has waited longest without
 * saying HELLO, if there is one (a client that says nothing is worth less
 * than one about to). 0, or -ENOSPC when every client has said HELLO. */
static int make_room(struct collector *c)
{
	struct conn *oldest = NULL;
	for (size_t fd = 0; fd < c->conns_cap; fd++) {
		struct conn *conn = c->conns[fd];
		if (conn && conn_waits_hello(conn) &&
		    (!oldest || conn_born_ns(conn) < conn_born_ns(oldest)))
			oldest = conn;
	}
	if (!oldest)
		return -ENOSPC;
	/* Once per burst: a flood of silent clients would flood the log. */
	(c->n_evicted++ ? log_debug : log_warn)(
		"%zu clients connected, the most served at once: closing "
		"the one that waited longest without a HELLO (%" PRIu64
		" ms) to serve a new one",
		c->n_conns,
		(loop_now_ns() - conn_born_ns(oldest)) / 1000000);
	close_conn(c, oldest);
	return 0;
}

static void accept_client(struct collector *c, int fd, pid_t pid,
			  uid_t uid);

/* A client accepted: what it makes the collector log is charged to its
 * user. */
static void accept_one(struct collector *c, int fd, pid_t pid, uid_t uid)
{
	struct log_budget *was = log_charge(budget_of(c, (unsigned)uid));
	accept_client(c, fd, pid, uid);
	log_charge(was);
}

static void accept_client(struct collector *c, int fd, pid_t pid,
			  uid_t uid)
{
	struct conn *conn;
	const char *opt;
	int rc;

	if (!uid_allowed(c, uid, fd)) {
		refuse(c, pid, uid);
		close(fd);
		return;
	}
	if ((opt = over_share(c, uid, pid)) != NULL) {
		refuse_share(c, fd, pid, uid, opt);
		return;
	}
	if (c->n_conns < c->max_conns && c->n_evicted) {
		log_info("%" PRIu64 " clients that said nothing were closed "
			 "to make room",
			 c->n_evicted);
		c->n_evicted = 0;
	}
	if (c->n_conns >= c->max_conns && make_room(c) < 0) {
		if (c->n_shed++ == 0)
			log_warn("%zu clients connected, the most served at "
				 "once (--max-clients): turning new ones "
				 "away until some leave",
				 c->n_conns);
		log_debug("client pid %d turned away: too many clients",
			  (int)pid);
		close(fd);
		return;
	}
	conn = conn_new(fd, pid, uid, c->reg);
	if (!conn) {
		log_error("client pid %d: out of memory; closing", (int)pid);
		close(fd);
		return;
	}
	if (c->ctl)
		control_attach(c->ctl, conn);
	if ((rc = track_conn(c, fd, conn)) < 0 ||
	    (rc = loop_add_fd(c->loop, fd, EPOLLIN, on_conn, c)) < 0) {
		log_error("client pid %d: cannot watch its socket: %s",
			  (int)pid, strerror(-rc));
		if (c->conns_cap > (size_t)fd && c->conns[fd] == conn) {
			c->conns[fd] = NULL;
			c->n_conns--;
		}
		conn_free(conn);
		return;
	}
	log_debug("client pid %d connected", (int)pid);
}

static void on_listener(struct loop *loop, int lfd, uint32_t events,
			void *arg)
{
	struct collector *c = arg;
	(void)events;
	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		int fd;
		pid_t pid;
		uid_t uid;
		int rc = listener_accept(c->lis, &fd, &pid, &uid);
		if (rc == -EAGAIN)
			return;
		if (rc == -EINTR || rc == -ECONNABORTED)
			continue;
		if (rc == 1) { /* no descriptor: one client turned away */
			if (c->n_shed_fd++ == 0)
				log_warn("out of file descriptors with %zu "
					 "clients connected: turning new ones "
					 "away until some leave (raise the "
					 "limit: ulimit -n)",
					 c->n_conns);
			continue;
		}
		if (rc < 0) {
			/* Out of fds or memory: the pending client stays
			 * queued, and level-triggered epoll would spin on
			 * it, so pause accepting for a moment. */
			log_warn("accept: %s; pausing new connections for "
				 "100 ms",
				 strerror(-rc));
			if (loop_mod_fd(loop, lfd, 0) == 0 &&
			    !loop_add_timer(loop, ACCEPT_PAUSE_NS, 0,
					    on_accept_resume, c))
				loop_mod_fd(loop, lfd, EPOLLIN);
			return;
		}
		if (c->n_shed_fd || c->n_shed) {
			log_info("accepting new clients again; %" PRIu64
				 " were turned away",
				 c->n_shed_fd + c->n_shed);
			c->n_shed_fd = c->n_shed = 0;
		}
		accept_one(c, fd, pid, uid);
	}
}

/* A profile holding samples of conn's was written (proc.h): tell its
 * library (conn.h's conn_ack). */
static void ack_conn(struct collector *c, struct conn *conn)
{
	if (conn_ack(conn) == 1) /* the rest when the socket takes it */
		loop_mod_fd(c->loop, conn_fd(conn), EPOLLIN | EPOLLOUT);
}

static void on_written(void *arg, void *owner)
{
	ack_conn(arg, owner);
}

/* Every second: connections that broke a time-out (conn.h) go, and an
 * acknowledgement that did not fit last time goes out. */
static void on_sweep(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct collector *c = arg;
	uint64_t now = loop_now_ns();
	(void)loop;
	(void)t;
	for (size_t fd = 0; fd < c->conns_cap; fd++) {
		if (!c->conns[fd])
			continue;
		struct log_budget *was = log_charge(
			budget_of(c, conn_peer_uid(c->conns[fd])));
		if (conn_expired(c->conns[fd], now))
			close_conn(c, c->conns[fd]);
		else
			ack_conn(c, c->conns[fd]);
		log_charge(was);
	}
	for (size_t i = 0; i < COLLECTOR_LOG_BUDGETS; i++)
		if (c->budgets[i].used_ns)
			log_budget_report(&c->budgets[i].b);
	if (c->n_share_refused > 1)
		log_info("%" PRIu64 " clients turned away in the last second "
			 "for their user's or process's share of the "
			 "connections",
			 c->n_share_refused);
	c->n_share_refused = 0;
}

/* The end of --exit-grace: whoever is still connected is running on. */
static void on_grace_end(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct collector *c = arg;
	(void)t;
	log_debug("--exit-grace over: %zu clients still connected",
		  c->n_conns);
	loop_stop(loop);
}

/*
 * SIGTERM or SIGINT: stop. With --exit-grace and clients connected, first
 * serve them until they have all ended or the grace is over: processes
 * that end just after the one pyprof record waited for (multiprocessing's
 * forkserver and resource tracker, a pool's last workers) then send
 * their last samples, and are not taken for daemons. A second signal
 * stops at once.
 */
static void on_signal(struct loop *loop, int fd, uint32_t events, void *arg)
{
	struct collector *c = arg;
	struct signalfd_siginfo si;
	(void)events;
	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return;
	if (!c->stopping && c->opts->exit_grace_ns && c->n_conns &&
	    loop_add_timer(loop, c->opts->exit_grace_ns, 0, on_grace_end, c)) {
		c->stopping = 1;
		log_info("%s received: waiting up to %" PRIu64 " ms for %zu "
			 "connected clients to end",
			 si.ssi_signo == SIGINT
				 ? "SIGINT"
				 : "SIGTERM",
			 c->opts->exit_grace_ns / 1000000, c->n_conns);
		return;
	}
	log_info("%s received: writing profiles and exiting",
		 si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
	loop_stop(loop);
}

/* Clients that connected and are not accepted yet (a short process that
 * connected at its exit, just before we were told to stop): accepted, so
 * that what they sent is read, not dropped with the listening socket. */
static void accept_pending(struct collector *c)
{
	for (int i = 0; i < 1 << 16; i++) {
		int fd, rc;
		pid_t pid;
		uid_t uid;
		rc = listener_accept(c->lis, &fd, &pid, &uid);
		if (rc == -EINTR || rc == -ECONNABORTED || rc == 1)
			continue;
		if (rc < 0)
			return;
		accept_one(c, fd, pid, uid);
	}
}

/* ---- shutdown ---------------------------------------------------------------- */

/* Stops listening, takes in what every client already sent, closes them
 * (which writes per-process profiles), then the merged profiles and the
 * summary, which counts the processes that were still running; if all
 * went to disk, tells the libraries so (CTL_WRITTEN), so that the next
 * collector does not count those samples as lost. */
static void shut_down(struct collector *c)
{
	struct {
		int fd;
		uint64_t n;
	} * acks;
	size_t n_acks = 0;
	uint64_t n_running = 0;

	accept_pending(c);
	listener_close(c->lis);
	c->lis = NULL;
	/* Waiting HTTP requests get 503 before their windows would lose
	 * the processes. */
	if (c->ext->stop_serving)
		c->ext->stop_serving(c->ext->arg);
	acks = calloc(c->n_conns + 1, sizeof(*acks));
	/* still open after what it sent: a process that runs on */
	for (size_t fd = 0; fd < c->conns_cap; fd++)
		if (c->conns[fd] && conn_read(c->conns[fd], 1) == 0 &&
		    conn_pid(c->conns[fd]))
			n_running++;
	/* Windows held for want of room: written now, or counted as lost
	 * in their processes' last profiles, written next. */
	output_flush_held(c->out);
	for (size_t fd = 0; fd < c->conns_cap; fd++) {
		struct conn *conn = c->conns[fd];
		if (!conn)
			continue;
		if (acks) {
			acks[n_acks].fd = conn_ack_later(conn,
							 &acks[n_acks].n);
			n_acks += acks[n_acks].fd >= 0;
		}
		close_conn(c, conn);
	}
	output_shutdown(c->out, n_running);
	/* The last windows are queued: sent for a few seconds, or spooled. */
	if (c->ext->end_sinks)
		c->ext->end_sinks(c->ext->arg);
	for (size_t i = 0; i < n_acks; i++) {
		if (output_failed(c->out))
			close(acks[i].fd); /* not all on disk: say nothing */
		else
			conn_ack_after(acks[i].fd, acks[i].n);
	}
	free(acks);
	/* what was suppressed and not said yet, said now */
	for (size_t i = 0; i < COLLECTOR_LOG_BUDGETS; i++) {
		c->budgets[i].b.refill_ns = 0;
		log_budget_report(&c->budgets[i].b);
	}
}

/* ---- setup -------------------------------------------------------------------- */

static int setup_signals(struct collector *c)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* Blocked, they wait in the signalfd for the loop to read them. */
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	c->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (c->sigfd < 0)
		return -errno;
	/* A client that vanishes must not kill us when we write to it
	 * (control messages, later). */
	signal(SIGPIPE, SIG_IGN);
	return loop_add_fd(c->loop, c->sigfd, EPOLLIN, on_signal, c);
}

/* Many clients at once need many fds; the soft limit is often 1024.
 * Returns how many clients fit, FD_RESERVE descriptors kept aside (a
 * quarter of the limit when it is small). */
static size_t raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024 - FD_RESERVE;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30))
		rl.rlim_cur = 1u << 30;
	return rl.rlim_cur > 4 * FD_RESERVE ? rl.rlim_cur - FD_RESERVE
					    : rl.rlim_cur * 3 / 4;
}

static void signal_ready(int fd)
{
	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		log_warn("--ready-fd %d: %s", fd, strerror(errno));
	close(fd);
}

/* The directory that will hold path must exist and be writable. */
static int check_writable_dir(const char *path)
{
	char dir[4096];
	if (!path)
		return 0;
	path_split(path, dir, sizeof(dir));
	if (access(dir, W_OK | X_OK) < 0) {
		int e = errno;
		log_error("cannot write %s: %s: %s", path, dir, strerror(e));
		return -e;
	}
	return 0;
}

/* The socket path: --socket, or the default written into buf. */
static const char *socket_path(const struct collector_opts *opts, char *buf,
			       size_t cap)
{
	if (opts->socket_path)
		return opts->socket_path;
	if (pyprof_default_socket(buf, cap) < 0) {
		log_error("the default socket path is too long; use "
			  "--socket");
		return NULL;
	}
	return buf;
}

/* How many clients are served at once: --max-clients, within what the
 * descriptor limit allows. */
static size_t max_clients(const struct collector_opts *opts)
{
	size_t max = raise_fd_limit();
	if (opts->max_clients && opts->max_clients < max)
		max = opts->max_clients;
	else if (opts->max_clients > max)
		log_warn("--max-clients %zu: the descriptor limit allows %zu "
			 "(ulimit -n)",
			 opts->max_clients, max);
	else if (!opts->max_clients && max > COLLECTOR_MAX_CLIENTS)
		max = COLLECTOR_MAX_CLIENTS;
	return max;
}

/* Each user's and each process's share of the connections, and the
 * bounds on the definitions all clients, and one user's, may hold (see
 * collector.h). */
static void set_shares(struct collector *c)
{
	const struct collector_opts *o = c->opts;
	uint64_t mem = o->max_memory ? o->max_memory : COLLECTOR_MAX_MEMORY;
	uint64_t mem_user = o->max_memory_user ? o->max_memory_user
					       : mem / 4;

	c->max_user = o->max_clients_user ? o->max_clients_user
					  : (c->max_conns + 3) / 4;
	c->max_proc = o->max_clients_proc ? o->max_clients_proc
					  : COLLECTOR_MAX_CLIENTS_PROC;
	if (c->max_user > c->max_conns)
		c->max_user = c->max_conns;
	if (mem_user > mem)
		mem_user = mem;
	procs_set_def_limits(c->reg, mem, mem_user, (unsigned)geteuid());
	log_debug("shares: %zu connections a user, %zu a process; %" PRIu64
		  " MiB of definitions in all, %" PRIu64 " MiB a user",
		  c->max_user, c->max_proc, mem >> 20, mem_user >> 20);
}

/* The loop, the symbol tables, the processes, the outputs, control. */
static int make_parts(struct collector *c)
{
	c->loop = loop_new();
	c->st = symtab_new();
	c->reg = c->st ? procs_new(c->st) : NULL;
	c->out = c->reg && c->loop ? output_new(c->opts, c->loop, c->st,
						c->reg)
				   : NULL;
	c->ctl = c->loop ? control_new(c->loop) : NULL;
	if (!c->loop || !c->out || !c->ctl) {
		log_error("out of memory");
		return -ENOMEM;
	}
	procs_set_written_hook(c->reg, on_written, c);
	return 0;
}

/* The output directory, and a check that the files written at exit can
 * be (fail now, not after a whole run). */
static int prepare_outputs(const struct collector_opts *opts)
{
	int rc;

	/* Profiles hold every process's command line: ours alone, or our
	 * group's with --output-group. */
	file_set_group(opts->output_shared ? opts->output_gid : (gid_t)-1);
	if (opts->output_dir &&
	    (rc = file_mkdirs(opts->output_dir,
			      opts->output_shared ? 0750 : 0700)) < 0) {
		log_error("cannot create output directory %s: %s",
			  opts->output_dir, strerror(-rc));
		return rc;
	}
	if (opts->output_dir && opts->per_uid) {
		char err[PATH_MAX + 256];
		if ((rc = readers_prepare(opts->output_dir, opts->output_gid,
					  err, sizeof(err))) < 0) {
			log_error("%s", err);
			return rc;
		}
	}
	if ((rc = check_writable_dir(opts->output_file)) < 0 ||
	    (rc = check_writable_dir(opts->summary_file)) < 0 ||
	    (rc = check_writable_dir(opts->timeline_file)) < 0)
		return rc;
	return 0;
}

/* The parts lent to the extensions (collector.h). */
static void lend_parts(struct collector *c, const char *path)
{
	c->parts.loop = c->loop;
	c->parts.st = c->st;
	c->parts.reg = c->reg;
	c->parts.ctl = c->ctl;
	c->parts.out = c->out;
	c->parts.socket_path = path;
}

/* Signals, the listening socket, the sweep timer and the outputs' timers
 * on the loop; then the line saying where we listen. */
static int start_listening(struct collector *c, const char *path)
{
	const struct collector_opts *opts = c->opts;
	char err[ERR_LEN];
	int rc;

	if ((rc = setup_signals(c)) < 0) {
		log_error("cannot set up signal handling: %s", strerror(-rc));
		return rc;
	}
	if ((rc = listener_open(path, opts->n_allow_uids + opts->n_allow_gids > 0, &c->lis,
				err)) < 0) {
		log_error("%s", err);
		return rc;
	}
	if ((rc = loop_add_fd(c->loop, listener_fd(c->lis), EPOLLIN,
			      on_listener, c)) < 0) {
		log_error("cannot watch the listening socket: %s",
			  strerror(-rc));
		return rc;
	}
	if (!loop_add_timer(c->loop, SWEEP_NS, SWEEP_NS, on_sweep, c)) {
		log_error("out of memory");
		return -ENOMEM;
	}
	if ((rc = output_start(c->out)) < 0) {
		log_error("out of memory");
		return rc;
	}
	log_info("listening on %s%s%s%s%s%s%s%s", path,
		 opts->output_dir ? "; profiles go to " : "",
		 opts->output_dir ? opts->output_dir : "",
		 opts->merge ? " (merged)" : "",
		 opts->period_ns ? ", every period" : "",
		 opts->output_file ? "; merged profile at exit: " : "",
		 opts->output_file ? opts->output_file : "",
		 opts->push ? "; windows pushed" : "");
	return 0;
}

/* Frees whatever was made, on every way out. */
static void tear_down(struct collector *c)
{
	if (c->ext->stop_serving)
		c->ext->stop_serving(c->ext->arg);
	if (c->lis)
		listener_close(c->lis);
	if (c->conns) {
		for (size_t fd = 0; fd < c->conns_cap; fd++)
			if (c->conns[fd])
				close_conn(c, c->conns[fd]);
		free(c->conns);
	}
	control_free(c->ctl);
	if (c->ext->end_sinks)
		c->ext->end_sinks(c->ext->arg);
	if (c->ext->done)
		c->ext->done(c->ext->arg);
	output_free(c->out);
	procs_free(c->reg);
	symtab_free(c->st);
	if (c->sigfd >= 0)
		close(c->sigfd);
	loop_free(c->loop);
}

int collector_run(const struct collector_opts *opts,
		  const struct collector_ext *ext)
{
	static const struct collector_ext none;
	struct collector c = { .opts = opts, .sigfd = -1, .ext = ext ? ext : &none };
	char def_path[256];
	const char *path = socket_path(opts, def_path, sizeof(def_path));
	int rc = -ENAMETOOLONG;

	if (!path)
		goto out;
	c.max_conns = max_clients(opts);
	if ((rc = make_parts(&c)) < 0 || (rc = prepare_outputs(opts)) < 0)
		goto out;
	set_shares(&c);
	lend_parts(&c, path);
	if ((c.ext->add_sinks &&
	     (rc = c.ext->add_sinks(c.ext->arg, &c.parts)) < 0) ||
	    (rc = start_listening(&c, path)) < 0 ||
	    (c.ext->start_serving &&
	     (rc = c.ext->start_serving(c.ext->arg, &c.parts)) < 0))
		goto out;
	for (size_t i = 0; i < opts->n_allow_uids; i++)
		log_info("clients of uid %u are allowed too (socket mode 0666)",
			 (unsigned)opts->allow_uids[i]);
	for (size_t i = 0; i < opts->n_allow_gids; i++) {
		struct group gr, *g = NULL;
		char gbuf[4096], name[32];
		/* the number stands for the name when the group has none */
		if (getgrgid_r(opts->allow_gids[i], &gr, gbuf, sizeof(gbuf),
			       &g) != 0 ||
		    !g)
			snprintf(name, sizeof(name), "%u",
				 (unsigned)opts->allow_gids[i]);
		log_info("clients in group %s (gid %u) are allowed too (socket "
			 "mode 0666)",
			 g ? g->gr_name : name,
			 (unsigned)opts->allow_gids[i]);
	}
	signal_ready(opts->ready_fd);
	if ((rc = loop_run(c.loop)) < 0) {
		log_error("event loop: %s", strerror(-rc));
		c.failed = 1;
	}
	shut_down(&c);
	rc = c.failed || output_failed(c.out) ? -EIO : 0;
out:
	tear_down(&c);
	return rc;
}
