/*
 * readfile.c - reading a file descriptor to its end (see readfile.h).
 *
 * Blocking; any thread, not signal handlers.
 */
#include "common/readfile.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/grow.h"

int read_fd_all(int fd, size_t max, uint8_t **out, size_t *len)
{
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	ssize_t got;

	for (;;) {
		/* One byte past max tells a file of max bytes from a longer
		 * one. */
		size_t room = max - n + 1;

		if (grow_array(&buf, &cap, n + 1, 1, 1 << 16) < 0) {
			free(buf);
			return -ENOMEM;
		}
		got = read(fd, buf + n, cap - n < room ? cap - n : room);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n > max) {
			free(buf);
			return -E2BIG;
		}
	}
	*out = buf;
	*len = n;
	return 0;
}
