/*
 * cmd_util.c - helpers shared by the pyprof command's subcommands: where our
 * own files are, command lookup, option values, the collector's summary
 * file, and private temporary directories.
 *
 * Called from the pyprof process's main thread only (see cmd.h). Nothing
 * here keeps state between calls.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "common/log.h"

int cmd_self_dir(char *buf, size_t n)
{
	char exe[CMD_PATH_MAX];
	ssize_t len;
	char *slash;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0)
		return -errno;
	if ((size_t)len >= sizeof(exe) - 1)
		return -ENAMETOOLONG;
	exe[len] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -EINVAL;
	if (slash == exe)
		slash++; /* the executable sits in "/" */
	*slash = '\0';
	if (strlen(exe) >= n)
		return -ENAMETOOLONG;
	memcpy(buf, exe, strlen(exe) + 1);
	return 0;
}

const char *const cmd_lib_rel[] = {
	"libpyprof.so",	       /* build tree: build/ */
	"../lib/libpyprof.so", /* installed: PREFIX/bin, PREFIX/lib */
	NULL
};

const char *const cmd_module_rel[] = {
	"../preload/module/pyprof.py",	  /* build tree */
	"../lib/pyprof/python/pyprof.py", /* installed */
	NULL
};

int cmd_find_beside(const char *dir, const char *const *rel, char *out,
		    size_t n)
{
	char path[CMD_PATH_MAX];
	char real[PATH_MAX];
	struct stat st;
	size_t i;

	for (i = 0; rel[i]; i++) {
		int len = snprintf(path, sizeof(path), "%s/%s", dir, rel[i]);
		if (len < 0 || (size_t)len >= sizeof(path))
			continue;
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		/* Canonical, so LD_PRELOAD and log lines carry no "..". */
		if (!realpath(path, real))
			continue;
		if (strlen(real) >= n)
			return -ENAMETOOLONG;
		memcpy(out, real, strlen(real) + 1);
		return 0;
	}
	return -ENOENT;
}

/* 0 if path is an executable regular file, -EACCES if it exists but is not
 * (or is a directory), -ENOENT if it does not exist. */
static int check_exec(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return errno == EACCES ? -EACCES : -ENOENT;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
		return -EACCES;
	return 0;
}

int cmd_find_command(const char *name)
{
	char path[CMD_PATH_MAX];
	const char *dirs, *p, *end;
	int ret = -ENOENT;

	if (!name[0])
		return -ENOENT;
	if (strchr(name, '/'))
		return check_exec(name);

	dirs = getenv("PATH");
	if (!dirs)
		dirs = "/bin:/usr/bin"; /* what glibc's execvp uses */
	for (p = dirs;; p = end + 1) {
		size_t dlen;
		int r, len;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		dlen = (size_t)(end - p);
		/* An empty entry means the current directory (POSIX). */
		if (dlen == 0)
			len = snprintf(path, sizeof(path), "./%s", name);
		else
			len = snprintf(path, sizeof(path), "%.*s/%s", (int)dlen,
				       p, name);
		if (len > 0 && (size_t)len < sizeof(path)) {
			r = check_exec(path);
			if (r == 0)
				return 0;
			if (r == -EACCES)
				ret = -EACCES; /* execvp keeps looking too */
		}
		if (!*end)
			break;
	}
	return ret;
}

int cmd_parse_uint(const char *s, unsigned long lo, unsigned long hi,
		   unsigned long *out)
{
	unsigned long v = 0;
	const char *p;

	if (!s || !*s)
		return -EINVAL;
	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (ULONG_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

int cmd_summary_parse(const char *text, struct cmd_summary *out)
{
	unsigned found = 0;
	const char *p = text;

	memset(out, 0, sizeof(*out));
	while (*p && *p != '\n') {
		const char *key, *eq;
		unsigned long long v;
		char *end;
		size_t klen;

		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p || *p == '\n')
			break;
		key = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n' &&
		       *p != '\r')
			p++;
		eq = memchr(key, '=', (size_t)(p - key));
		if (!eq || eq[1] < '0' || eq[1] > '9')
			continue;
		errno = 0;
		v = strtoull(eq + 1, &end, 10);
		if (errno || end != p)
			continue;
		klen = (size_t)(eq - key);
		if (klen == 9 && !memcmp(key, "processes", 9)) {
			out->n_processes = v;
			found |= 1;
		} else if (klen == 7 && !memcmp(key, "samples", 7)) {
			out->n_samples = v;
			found |= 2;
		} else if (klen == 4 && !memcmp(key, "lost", 4)) {
			out->n_lost = v;
			found |= 4;
		} else if (klen == 7 && !memcmp(key, "refused", 7)) {
			out->n_refused = v;
		} else if (klen == 7 && !memcmp(key, "running", 7)) {
			out->n_running = v;
		} else if (klen == 10 && !memcmp(key, "heap_procs", 10)) {
			out->heap_procs = v;
		} else if (klen == 9 && !memcmp(key, "heap_peak", 9)) {
			out->heap_peak = v;
		} else if (klen == 17 &&
			   !memcmp(key, "heap_peak_unix_ns", 17)) {
			out->heap_peak_unix_ns = v;
		} else if (klen == 13 && !memcmp(key, "heap_peak_pid", 13)) {
			out->heap_peak_pid = v;
		}
	}
	/* "refused N REASON" lines */
	while ((p = strchr(p, '\n'))) {
		unsigned long long v;
		char *end;
		p++;
		if (strncmp(p, "refused ", 8) != 0 ||
		    out->n_reasons == CMD_SUMMARY_REASONS)
			continue;
		errno = 0;
		v = strtoull(p + 8, &end, 10);
		if (errno || end == p + 8 || *end != ' ')
			continue;
		size_t wl = strcspn(end + 1, "\n");
		if (wl >= sizeof(out->reasons[0].why))
			wl = sizeof(out->reasons[0].why) - 1;
		out->reasons[out->n_reasons].n = v;
		memcpy(out->reasons[out->n_reasons].why, end + 1, wl);
		out->reasons[out->n_reasons].why[wl] = '\0';
		out->n_reasons++;
	}
	return found == 7 ? 0 : -EINVAL;
}

int cmd_make_tmpdir(char *out, size_t n)
{
	/* Room for "/s.sock" and the collector's own temporary names. */
	const size_t room = sizeof(((struct sockaddr_un *)0)->sun_path) - 24;
	const char *base = getenv("TMPDIR");
	char tmpl[CMD_PATH_MAX];
	int len;

	if (!base || base[0] != '/' ||
	    strlen(base) + sizeof("/pyprof.XXXXXX") > room)
		base = "/tmp";
	len = snprintf(tmpl, sizeof(tmpl), "%s/pyprof.XXXXXX", base);
	if (len < 0 || (size_t)len >= sizeof(tmpl) || (size_t)len >= n)
		return -ENAMETOOLONG;
	if (!mkdtemp(tmpl)) /* mode 0700 */
		return -errno;
	memcpy(out, tmpl, (size_t)len + 1);
	return 0;
}

int cmd_remove_tmpdir(const char *dir)
{
	char path[CMD_PATH_MAX];
	struct dirent *de;
	DIR *d = NULL;
	int ret = 0;

	d = opendir(dir);
	if (!d) {
		ret = -errno;
		goto out;
	}
	while ((de = readdir(d)) != NULL) {
		int len;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		len = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (len < 0 || (size_t)len >= sizeof(path)) {
			if (!ret)
				ret = -ENAMETOOLONG;
			continue;
		}
		if (unlink(path) != 0 && errno != ENOENT && !ret)
			ret = -errno;
	}
	if (rmdir(dir) != 0 && !ret)
		ret = -errno;
out:
	if (d)
		closedir(d);
	return ret;
}

int cmd_join_path(char *out, size_t n, const char *dir, const char *name)
{
	int len = snprintf(out, n, "%s/%s", dir, name);

	return (len < 0 || (size_t)len >= n) ? -ENAMETOOLONG : 0;
}

long cmd_read_environ(int pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t len;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, cap - 1);
	close(fd);
	if (len < 0)
		return -1;
	buf[len] = '\0';
	return (long)len;
}

void cmd_printable_lines(char *s)
{
	char line[1024];
	char *w = s;

	while (*s) {
		size_t len = strcspn(s, "\n\t"), done = 0;

		/* in pieces: a long line's replacements never grow it */
		while (done < len) {
			size_t k = len - done < sizeof line - 1
					   ? len - done
					   : sizeof line - 1;
			size_t o;

			log_printable(line, sizeof line, s + done, k);
			o = strlen(line);
			memmove(w, line, o);
			w += o;
			done += k;
		}
		s += len;
		if (*s == '\n' || *s == '\t')
			*w++ = *s++;
	}
	*w = '\0';
}
