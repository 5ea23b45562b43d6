/*
 * lastthread.c - see lastthread.h. Agent thread only.
 */
#include "lastthread.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fdutil.h"
#include "sample/threads.h"

/* The state letter in a stat file's n bytes in buf (the field after
 * "(comm) "), or 0 when there is none. buf has room for a NUL at n. */
static char stat_state(char *buf, ssize_t n)
{
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the last ')' ends it */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return 0;
	return p[2];
}

/* The state letter of a task's stat file, or 0 when it cannot be read
 * (the task is gone). */
static char task_state(const char *path)
{
	char buf[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return stat_state(buf, n);
}

static int dead(char st)
{
	return st == 0 || st == 'Z' || st == 'X' || st == 'x';
}

/* /proc/self/stat, opened once per process and kept high (fdutil.h): an
 * open every few hundred milliseconds would take the lowest free number
 * for a moment, under a program that is rearranging its descriptors
 * (closing 1 and 2, making pipes to put there). pread at 0 reads it anew,
 * as top does with /proc/stat. */
static int stat_fd = -1;
static struct fd_id stat_id;
static int stat_pid;

static char leader_state(void)
{
	int pid = getpid();
	if (stat_fd >= 0 && (stat_pid != pid || !fd_is(stat_fd, &stat_id))) {
		/* a fork child closes the parent's copy; a number the program
		 * closed (and may have reused) is left alone */
		if (stat_pid != pid)
			fd_close_own(stat_fd, &stat_id);
		stat_fd = -1;
	}
	if (stat_fd < 0) {
		int fd = fd_park(open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
		if (fd < 0)
			return 0;
		if (fd_id_get(fd, &stat_id) < 0) {
			close(fd);
			return 0;
		}
		stat_fd = fd;
		stat_pid = pid;
	}
	char buf[512];
	return stat_state(buf, pread(stat_fd, buf, sizeof buf - 1, 0));
}

void program_gone_prepare(void)
{
	(void)leader_state();
}

int program_gone(void)
{
	/* /proc/self/stat shows the main thread (the thread group leader):
	 * while it runs, the program does. When it has ended it stays a
	 * zombie until every other thread has ended too. */
	char st = leader_state();
	if (st != 'Z' && st != 'X')
		return 0; /* running, or no /proc to tell: assume it runs */
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	int pid = getpid(), alive = 0;
	struct dirent *e;
	char path[64];
	while (!alive && (e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == pid || threads_is_internal(tid))
			continue;
		memcpy(path, "/proc/self/task/", 16);
		size_t len = strlen(e->d_name);
		if (len > sizeof path - 22)
			continue;
		memcpy(path + 16, e->d_name, len);
		memcpy(path + 16 + len, "/stat", 6);
		if (!dead(task_state(path)))
			alive = 1;
	}
	closedir(d);
	return !alive;
}
