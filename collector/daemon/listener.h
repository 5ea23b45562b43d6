/*
 * listener.h - the collector's listening Unix socket: safe creation,
 * refusal to start twice, and accepting clients with their credentials.
 *
 * Security model (docs/security.md): the socket is mode 0600 in a
 * directory we create with mode 0700, and every client's uid is checked
 * with SO_PEERCRED by the caller (collector.c). A collector that serves
 * other users too (--allow-user) opens the way for them: socket 0666 in a
 * directory of mode 0711 (others may reach the socket by its name, not
 * list or change the directory), and the credentials alone decide. Starting on a path where a
 * live collector answers is refused; a dead collector's socket file is
 * removed and replaced.
 *
 * Used from main() setup and from the loop thread.
 */
#ifndef PYPROF_LISTENER_H
#define PYPROF_LISTENER_H

#include <stddef.h>
#include <sys/types.h>
#include "common/errbuf.h"

struct listener;


/* Binds and listens on path. Creates the missing parent directories with
 * mode 0700 (0711 for the socket's own directory when shared; an existing
 * one of ours gets 0711 too); refuses a socket directory that is a
 * symbolic link (never following it, nor changing its target) or that
 * another user could tamper with (owned by someone other than us or root,
 * or writable by others without the sticky bit), with an error that says
 * what to do about it; refuses when a collector already answers on path;
 * removes a stale socket file. The socket is non-blocking and mode 0600
 * (0666 when shared). Returns 0 and the listener in *out, or a negative
 * errno with the reason in err (ERR_LEN bytes): -EADDRINUSE when a
 * collector answers. */
int listener_open(const char *path, int shared, struct listener **out,
		  char *err);

/* Stops listening, closes the socket, and unlinks the socket file if it is
 * still the one we created. NULL is fine. */
void listener_close(struct listener *l);

int listener_fd(const struct listener *l);
const char *listener_path(const struct listener *l);

/* Accepts one pending client: a non-blocking, close-on-exec fd in *fd and
 * the peer's credentials. Returns 0, -EAGAIN when none is pending, 1 when
 * the process had no descriptor left (EMFILE, ENFILE): the client was
 * accepted on a descriptor held in reserve for this (/dev/null, reopened
 * after) and closed at once, so that the backlog keeps moving; or another
 * negative errno (-EMFILE when even the reserve could not help). */
int listener_accept(struct listener *l, int *fd, pid_t *pid, uid_t *uid);

/* Whether the client of uid at the other end of fd (an accepted Unix
 * socket) is one the collector serves: our own user, a uid of uids
 * (--allow-user), or a process whose gid or one of whose supplementary
 * groups, as the kernel saw them when it connected (SO_PEERCRED,
 * SO_PEERGROUPS, Linux 4.13), is in gids (--allow-group). 1 or 0. The
 * collector's clients and --http-members' callers are held to the same
 * rule. */
int listener_peer_served(int fd, uid_t uid, const uid_t *uids, size_t n_uids,
			 const gid_t *gids, size_t n_gids);

#endif /* PYPROF_LISTENER_H */
