/*
 * record_result.c - the end of `pyprof record`: the profile the collector
 * wrote in the temporary directory put where -o asked (atomically, or
 * converted with --format; a fallback place if that fails), the files
 * beside it (heap, per thread), and the one-line report from the
 * collector's summary.
 *
 * Single-threaded, in the pyprof process, after the collector exited.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/record.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/readfile.h"
#include "daemon/pprof.h"
#include "daemon/symtab.h"
#include "pyprof/envcheck.h"
#include "views/view_read.h"

/* ---- the result ------------------------------------------------------- */

/* Reads the file src whole into *data (malloc'd). 0 or -errno. */
static int read_whole(const char *src, uint8_t **data, size_t *len)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = read_fd_all(fd, SIZE_MAX - 1, data, len);
	close(fd);
	return rc;
}

/* Writes what the collector left in the temporary directory (src) to
 * dest, atomically; or, with format, converts it there. 0 or -errno
 * (the conversion logs its own reason). */
static int put_file(const struct record *r, const char *src, const char *dest,
		    int convert)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int rc;

	if (convert) {
		struct convert_req c = {
			.profile = src,
			.timeline = r->timeline[0] ? r->timeline : NULL,
			.format = r->format,
			.split = r->split,
			.output = dest,
			.shown = r->output,
		};
		return cmd_convert_file(&c);
	}
	rc = read_whole(src, &data, &len);
	if (rc == 0)
		rc = file_write_atomic(dest, data, len, FILEIO_REPLACE);
	free(data);
	return rc;
}

/* dest, as asked, or if it cannot be written, a fallback: the current
 * directory, else $TMPDIR or /tmp, as pyprof.<pid>.<name of dest>, said
 * on stderr. shown names dest as the user typed it; *where gets the path
 * written (n bytes). 0 if written where asked, 1 if in the fallback,
 * -errno if nowhere. */
static int place(const struct record *r, const char *src, const char *dest,
		 const char *shown, int convert, char *where, size_t n)
{
	const char *name = strrchr(dest, '/'), *tmp = getenv("TMPDIR");
	const char *dirs[3] = { ".", tmp && tmp[0] == '/' ? tmp : "/tmp",
				"/tmp" };
	char cwd[CMD_PATH_MAX];
	int rc, rc2;

	snprintf(where, n, "%s", shown);
	rc = put_file(r, src, dest, convert);
	if (rc == 0)
		return 0;
	name = name ? name + 1 : dest;
	if (getcwd(cwd, sizeof(cwd)))
		dirs[0] = cwd;
	rc2 = rc;
	for (int i = 0; i < 3; i++) {
		int len = snprintf(where, n, "%s/pyprof.%d.%s", dirs[i],
				   (int)getpid(), name);
		if (len < 0 || (size_t)len >= n)
			continue;
		rc2 = put_file(r, src, where, convert);
		if (rc2 == 0) {
			/* (a conversion said why already) */
			log_error("cannot write %s%s%s; written to %s instead",
				  shown, convert ? "" : ": ",
				  convert ? "" : strerror(-rc), where);
			return 1;
		}
	}
	log_error("cannot write %s%s%s, nor anywhere else", shown,
		  convert ? "" : ": ", convert ? "" : strerror(-rc));
	return rc2;
}

/* How many processes of the profile at path run Python 3.8 or later (the
 * ones that measure waits when asked), from the comments the collector
 * writes ("pid N executable: ..., Python 3.11.7, ..."); 0 if it cannot be
 * read. */
static unsigned long long waits_able(const char *path)
{
	char err[ERR_LEN];
	struct view_profile *p = NULL;
	unsigned long long n = 0;

	if (view_read_file(path, &p, err) != 0)
		return 0;
	for (size_t i = 0; i < p->n_comments; i++) {
		const char *v = strstr(p->comments[i], ", Python ");
		int major = 0, minor = 0;
		if (strncmp(p->comments[i], "pid ", 4) || !v ||
		    sscanf(v + 9, "%d.%d", &major, &minor) != 2)
			continue;
		if (major > 3 || (major == 3 && minor >= 8))
			n++;
	}
	view_free(p);
	return n;
}

/* ---- block and mutex profiles ------------------------------------------ */

static const struct {
	int kind;	  /* enum pprof_waits */
	const char *rest; /* after the stem */
	const char *none; /* why a profile has no wait */
} wait_kinds[] = {
	{ PPROF_WAITS_BLOCK, ".block.pb.gz",
	  "no thread waited for a lock, the GIL or a condition" },
	{ PPROF_WAITS_MUTEX, ".mutex.pb.gz",
	  "no thread held a lock another waited for" },
};

/* Whether --waits asked for block and mutex profiles (a rate, or a yes;
 * --waits=0 or off asks for none). */
static int waits_asked(const struct record *r)
{
	unsigned long long ns = 0;

	return r->waits && config_waits_rate(r->waits, &ns) == 0 && ns > 0;
}

/* The collector writes a block or mutex profile only when some thread
 * waited. With --waits the user asked for both files, so the missing one
 * is written here with no sample, as Go writes an empty
 * /debug/pprof/block: a script that reads NAME.block.pb.gz finds it, and
 * go tool pprof reads it. Only when some process could measure waits
 * (able: the profile's count of processes on Python 3.8 or later): an
 * older one said it measured none, which is not zero waits. 0 or -errno
 * (logged). */
static int write_empty_waits(const struct record *r, unsigned long long able)
{
	char path[CMD_PATH_MAX + 32];
	struct symtab *st;
	int failed = 0;

	if (!waits_asked(r) || !able)
		return 0;
	st = symtab_new();
	if (!st) {
		log_error("cannot make the empty block and mutex profiles: "
			  "out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < sizeof wait_kinds / sizeof wait_kinds[0]; k++) {
		struct pprof_opts po = { .waits = wait_kinds[k].kind };
		struct stat sb;
		void *data = NULL;
		size_t len = 0;
		int rc;

		snprintf(path, sizeof(path), "%s/%s%s", r->tmpdir,
			 RECORD_TMP_STEM, wait_kinds[k].rest);
		if (stat(path, &sb) == 0)
			continue;
		rc = pprof_build(st, NULL, 0, &po, &data, &len, NULL);
		if (rc == 0)
			rc = file_write_atomic(path, data, len,
					       FILEIO_REPLACE);
		free(data);
		if (rc < 0) {
			log_error("cannot write an empty %s: %s", path,
				  strerror(-rc));
			failed = 1;
		}
	}
	symtab_free(st);
	return failed ? -EIO : 0;
}

/* "N waits" for the block or mutex profile at path (the sum of its
 * contentions), or why there is none; "" if it cannot be read. */
static void describe_waits(const char *path, size_t k, char *buf, size_t n)
{
	char err[ERR_LEN];
	struct view_profile *p = NULL;
	unsigned long long sum = 0;

	buf[0] = '\0';
	if (view_read_file(path, &p, err) != 0)
		return;
	for (size_t i = 0; i < p->n_samples; i++)
		if (p->n_types > 0 && p->samples[i].values[0] > 0)
			sum += (unsigned long long)p->samples[i].values[0];
	view_free(p);
	if (sum == 0)
		snprintf(buf, n, ", 0 waits: %s", wait_kinds[k].none);
	else
		snprintf(buf, n, ", %llu wait%s", sum, sum == 1 ? "" : "s");
}

/* The files the collector wrote beside its profile in the temporary
 * directory (profile.heap.pb.gz, profile.tid<TID>.<name>.pb.gz), each put
 * beside the output as NAME.heap.pb.gz..., NAME being the output without
 * its .pb.gz. The heap, block and mutex profiles are named on stderr;
 * with --waits, empty block and mutex profiles stand for the ones the
 * collector did not write (write_empty_waits, given able). 0, or 1 if
 * one went to a fallback or nowhere. */
static int place_beside(const struct record *r, unsigned long long able)
{
	static const char stem[] = RECORD_TMP_STEM;
	char base_abs[CMD_PATH_MAX], base[CMD_PATH_MAX], src[CMD_PATH_MAX];
	char dest[CMD_PATH_MAX + 256], shown[CMD_PATH_MAX + 256];
	char where[CMD_PATH_MAX + 256];
	struct dirent *de;
	DIR *d;
	int failed = write_empty_waits(r, able) < 0;

	d = opendir(r->tmpdir);
	if (!d)
		return failed;
	file_profile_base(r->output_abs, base_abs, sizeof(base_abs));
	file_profile_base(r->output, base, sizeof(base));
	while ((de = readdir(d)) != NULL) {
		const char *rest = de->d_name + sizeof(stem) - 1;
		if (strncmp(de->d_name, stem, sizeof(stem) - 1) ||
		    rest[0] != '.' || !strcmp(de->d_name, RECORD_TMP_PROFILE) ||
		    cmd_join_path(src, sizeof(src), r->tmpdir, de->d_name))
			continue;
		snprintf(dest, sizeof(dest), "%s%s", base_abs, rest);
		snprintf(shown, sizeof(shown), "%s%s", base, rest);
		int rc = place(r, src, dest, shown, 0, where, sizeof(where));
		if (rc != 0)
			failed = 1;
		if (rc >= 0 && !strcmp(rest, ".heap.pb.gz"))
			log_info("wrote %s (heap profile)", where);
		for (size_t k = 0;
		     rc >= 0 && k < sizeof wait_kinds / sizeof wait_kinds[0];
		     k++) {
			char what[160];
			if (strcmp(rest, wait_kinds[k].rest))
				continue;
			describe_waits(src, k, what, sizeof(what));
			log_info("wrote %s (%s profile%s)", where,
				 wait_kinds[k].kind == PPROF_WAITS_BLOCK
					 ? "block"
					 : "mutex",
				 what);
		}
	}
	closedir(d);
	return failed;
}

/* The last line of a run with heap profiles: the highest heap in use
 * (the collector's in-use estimate, heapagg.h), when (from the command's
 * start, and the wall clock), and which process when several sent heap
 * data. Nothing without heap data. */
static void report_heap_peak(const struct record *r,
			     const struct cmd_summary *sum)
{
	char size[32], when[64], zone[16], which[96] = "";
	unsigned long long t = sum->heap_peak_unix_ns;
	time_t sec = (time_t)(t / 1000000000ull);
	struct tm tm;

	if (!sum->heap_procs)
		return;
	if (!sum->heap_peak || !t) {
		log_info("heap peak: nothing in use was sampled");
		return;
	}
	view_fmt_value(size, sizeof(size),
		       sum->heap_peak > INT64_MAX ? INT64_MAX
						  : (int64_t)sum->heap_peak,
		       "bytes");
	if (!localtime_r(&sec, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) ||
	    !strftime(zone, sizeof(zone), "%Z", &tm))
		snprintf(when, sizeof(when), "@%lld", (long long)sec);
	else
		snprintf(when + strlen(when), sizeof(when) - strlen(when),
			 ".%03llu %s", t / 1000000ull % 1000, zone);
	if (sum->heap_procs > 1)
		snprintf(which, sizeof(which),
			 " by pid %llu (the highest of %llu processes)",
			 sum->heap_peak_pid, sum->heap_procs);
	if (r->start_unix_ns && t >= r->start_unix_ns)
		log_info("heap peak: %s in use%s, %.2f s after the start (%s)",
			 size, which,
			 (double)(t - r->start_unix_ns) / 1e9, when);
	else
		log_info("heap peak: %s in use%s (%s)", size, which, when);
}

/* Prints the one-line result (record.h). */
int record_report(const struct record *r, int coll_status)
{
	char buf[RECORD_SUMMARY_MAX];
	struct cmd_summary sum;
	struct stat st;
	char where[CMD_PATH_MAX + 256];
	ssize_t len = -1;
	int fd, placed, failed;

	if (coll_status == -1) {
		log_error("no profile written: lost track of the collector");
		return -ECHILD;
	}
	if (!WIFEXITED(coll_status) || WEXITSTATUS(coll_status) != 0) {
		log_error("no profile written: the collector %s",
			  record_describe_status(coll_status, buf,
						 sizeof(buf)));
		return -EIO;
	}
	if (stat(r->profile, &st) != 0) {
		log_error("no profile written: the collector exited without "
			  "writing %s",
			  r->profile);
		return -ENOENT;
	}
	/* The collector wrote into the temporary directory, which is
	 * always writable: the profile is lost only if no place at all can
	 * take it. --format: the pprof file is only a step (it goes with
	 * the temporary directory); the conversion says why if it fails. */
	placed = place(r, r->profile, r->output_abs, r->output,
		       r->format != NULL, where, sizeof(where));
	if (placed < 0)
		return -EIO;
	fd = open(r->summary, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (len >= 0)
		buf[len] = '\0';
	if (len < 0 || cmd_summary_parse(buf, &sum) != 0) {
		/* The profile is there; only the counts are missing. */
		log_info("wrote %s", where);
		return place_beside(r, 0) || placed ? -EIO : 0;
	}
	log_info("wrote %s (%llu sample%s, %llu process%s, %llu dropped)",
		 where, sum.n_samples, sum.n_samples == 1 ? "" : "s",
		 sum.n_processes, sum.n_processes == 1 ? "" : "es",
		 sum.n_lost);
	for (size_t i = 0; i < sum.n_reasons; i++)
		log_info("%llu process%s not profiled: %s (profiling off)",
			 sum.reasons[i].n, sum.reasons[i].n == 1 ? "" : "es",
			 sum.reasons[i].why);
	if (sum.n_processes == 0 && sum.n_refused == 0 && !r->attached)
		log_warn("no Python process reported to the collector (is "
			 "%s a CPython program? is PYPROF_DISABLE set?)",
			 r->command[0]);
	if (sum.n_running && !r->attached)
		log_warn("%llu profiled process%s still running when %s "
			 "exited (a daemon?): the profile stops there. record "
			 "stops with its command; to profile a daemon, run "
			 "pyprof-collector and start the daemon with "
			 "LD_PRELOAD=%s",
			 sum.n_running,
			 sum.n_running == 1 ? " was" : "es were", r->command[0],
			 r->lib);
	failed = place_beside(r, waits_able(r->profile)) || placed;
	report_heap_peak(r, &sum);
	return failed ? -EIO : 0;
}
