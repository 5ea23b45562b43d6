/*
 * test_output.c - what the collector writes when a process ends
 * (collector/daemon/output.h): the file's name, its mode and contents,
 * nothing left beside it; a directory that cannot be written holds the
 * profile in memory and writes it under the same name once it can; a
 * profile that never can is counted as lost and said so.
 *
 * A process fed known samples (functions f1, f2, f3 with counts that
 * differ) ends; its profile is read back with the views' pprof reader
 * and must hold exactly those counts.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/errbuf.h"
#include "common/loop.h"
#include "daemon/collector_opts.h"
#include "daemon/output.h"
#include "daemon/proc.h"
#include "proc_fixture.h"
#include "daemon/symtab.h"
#include "pyprof/wire.h"
#include "views/view_read.h"

#define MS 1000000ull

/* The samples fed: per function f1..f3, this many periods each. */
static const uint64_t fed[3] = { 7, 3, 11 };

/* A session for pid (comm "python3") with functions f1..f3 on one
 * thread, fed fed[] samples of each; NULL on failure. */
static struct proc_session *fed_proc(struct procs *reg, uint64_t pid)
{
	struct proc_bytes args[2] = { fx_bytes("python3"), fx_bytes("o.py") };
	struct proc_hello h = fx_hello(pid, WIRE_MODE_CPU, "python3", args, 2);
	const char *names[3] = { "f1", "f2", "f3" };
	struct proc_session *s;
	char err[ERR_LEN];
	int resumed, rc;

	if (proc_session_open(reg, &h, &s, &resumed, err) < 0)
		return NULL;
	rc = fx_functions(s, pid, "o.py", names, 3);
	for (int f = 0; f < 3 && !rc; f++)
		for (uint64_t k = 0; k < fed[f]; k++) {
			struct proc_sample r = { (uint64_t)f + 1, 1, 0, 1,
						 10 * MS, 0, 0, 0 };
			uint64_t clock = k * 10 * MS;
			if (proc_check_samples(s, &r, 1, 0, err) < 0 ||
			    proc_add_samples(s, &clock, &r, 1, err) < 0)
				rc = -1;
		}
	if (rc) {
		proc_session_close(s);
		return NULL;
	}
	return s;
}

/* The names in dir (a newline after each), sorted by readdir's order;
 * how many. */
static int list_dir(const char *dir, char *out, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int count = 0;

	out[0] = '\0';
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		size_t at = strlen(out);
		snprintf(out + at, n - at, "%s\n", e->d_name);
		count++;
	}
	closedir(d);
	return count;
}

/* The samples per function f1..f3 in the profile at path; -1 if it
 * cannot be read. */
static int read_counts(const char *path, uint64_t got[3])
{
	struct view_profile *vp;
	char err[ERR_LEN];
	int cnt;

	memset(got, 0, 3 * sizeof got[0]);
	if (view_read_file(path, &vp, err) < 0) {
		fprintf(stderr, "%s: %s\n", path, err);
		return -1;
	}
	cnt = view_count_type(vp);
	for (size_t i = 0; i < vp->n_samples; i++) {
		const struct view_sample *s = &vp->samples[i];
		const char *name;
		if (!s->n_frames)
			continue;
		name = vp->funcs[vp->frames[s->frames[0]].func].name;
		if (name[0] == 'f' && name[1] >= '1' && name[1] <= '3')
			got[name[1] - '1'] +=
				(uint64_t)s->values[cnt >= 0 ? cnt : 0];
	}
	view_free(vp);
	return 0;
}

/* Ends pid's session: the output writes (or holds) its profile. */
static void end_proc(struct output *o, struct proc_session *s)
{
	struct proc *p = proc_session_close(s);
	if (p)
		output_proc_ended(o, p);
}

/* An output writing into opts' directory, with its tables and loop. */
struct rig {
	struct symtab *st;
	struct procs *reg;
	struct loop *loop;
	struct output *o;
};

/* 0, or -1 if one part could not be made. */
static int rig_open(struct rig *r, const struct collector_opts *opts)
{
	r->st = symtab_new();
	r->reg = r->st ? procs_new(r->st) : NULL;
	r->loop = loop_new();
	r->o = r->reg && r->loop ? output_new(opts, r->loop, r->st, r->reg)
				 : NULL;
	return r->o && output_start(r->o) == 0 ? 0 : -1;
}

static void rig_close(struct rig *r)
{
	output_free(r->o);
	if (r->reg)
		procs_free(r->reg);
	if (r->st)
		symtab_free(r->st);
	if (r->loop)
		loop_free(r->loop);
}

/* 1. A process that ends: one file, <comm>.<pid>.<stamp>.pb.gz, 0600,
 * with exactly its samples; no temporary file beside it. */
static void check_written(const char *dir)
{
	struct collector_opts opts = { .output_dir = dir, .ready_fd = -1 };
	struct rig r;
	char names[4096], path[8200];
	uint64_t got[3];
	struct stat sb;

	CHECK_OR_RETURN(rig_open(&r, &opts) == 0, "1.1 an output started", );
	struct output *o = r.o;
	struct proc_session *s = fed_proc(r.reg, 4242);
	CHECK_OR_RETURN(s != NULL, "1.2 a fed process", );
	end_proc(o, s);
	CHECK(list_dir(dir, names, sizeof names) == 1,
	      "1.3 one file in the directory, nothing else (no temporary)");
	CHECK(!strncmp(names, "python3.4242.", 13) &&
		      strstr(names, ".pb.gz\n") != NULL,
	      "1.4 named <comm>.<pid>.<stamp>.pb.gz");
	names[strcspn(names, "\n")] = '\0';
	snprintf(path, sizeof path, "%s/%s", dir, names);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600,
	      "1.5 readable by its owner only (0600)");
	CHECK(read_counts(path, got) == 0 && got[0] == fed[0] &&
		      got[1] == fed[1] && got[2] == fed[2],
	      "1.6 exactly the samples fed, per function");
	CHECK(!output_failed(o), "1.7 nothing failed");
	unlink(path);
	output_shutdown(o, 0);
	rig_close(&r);
}

/* 2. The directory gone when the process ends: the profile is held (no
 * file anywhere), written under its name once the directory is back,
 * with the same samples. 3. Gone at exit for good: counted as lost,
 * not a crash, and the output says it failed to write. */
static void check_held(const char *dir)
{
	struct collector_opts opts = { .output_dir = dir,
				       .ready_fd = -1,
				       .hold_max = 1 << 20 };
	struct rig r;
	char names[4096], path[8200];
	uint64_t got[3];

	CHECK_OR_RETURN(rig_open(&r, &opts) == 0, "2.1 an output started", );
	struct output *o = r.o;
	rmdir(dir);
	struct proc_session *s = fed_proc(r.reg, 4343);
	CHECK_OR_RETURN(s != NULL, "2.2 a fed process", );
	end_proc(o, s);
	CHECK(access(dir, F_OK) != 0,
	      "2.3 nothing written while the directory is gone");
	CHECK(!output_failed(o), "2.4 held, not failed");
	mkdir(dir, 0700);
	output_flush_held(o);
	CHECK(list_dir(dir, names, sizeof names) == 1 &&
		      !strncmp(names, "python3.4343.", 13),
	      "2.5 written under its own name once the directory is back");
	names[strcspn(names, "\n")] = '\0';
	snprintf(path, sizeof path, "%s/%s", dir, names);
	CHECK(read_counts(path, got) == 0 && got[0] == fed[0] &&
		      got[1] == fed[1] && got[2] == fed[2],
	      "2.6 the held profile has every sample");
	unlink(path);

	/* 3. gone for good */
	rmdir(dir);
	s = fed_proc(r.reg, 4444);
	CHECK_OR_RETURN(s != NULL, "3.1 a fed process", );
	end_proc(o, s);
	output_shutdown(o, 0);
	CHECK(access(dir, F_OK) != 0,
	      "3.2 no directory made up for it at exit");
	CHECK(output_failed(o),
	      "3.3 a profile never written is a failure (the exit status)");
	rig_close(&r);
}

int main(void)
{
	char tmpl[] = "/tmp/test_output.XXXXXX", dir[64];

	CHECK_OR_RETURN(mkdtemp(tmpl) != NULL, "0.1 a temporary directory", 1);
	snprintf(dir, sizeof dir, "%s/out", tmpl);
	CHECK_OR_RETURN(mkdir(dir, 0700) == 0, "0.2 the output directory", 1);
	check_written(dir);
	check_held(dir);
	rmdir(dir);
	rmdir(tmpl);
	return check_summary();
}
