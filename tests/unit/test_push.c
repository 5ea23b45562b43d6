/*
 * test_push.c - the push pipeline's pure parts: the Pyroscope /ingest
 * query and the form of block and mutex windows (pyroscope.h), the OTLP
 * request's query (otlp_request.h), the
 * push options (push_opts.h) and the spool (spool.h) against a model:
 * order, the size cap (oldest dropped first, counted), reopening after
 * a "crash", the lock, and a corrupt file.
 *
 * The network side (push.c, push_http.c) is tested end to end by
 * tests/e2e/push.bats.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "push/otlp_request.h"
#include "push/push.h"
#include "push/push_opts.h"
#include "push/pyroscope.h"
#include "push/spool.h"

static void test_query(void)
{
	struct push_opts o = { .label_keys = { "env", "host" },
			       .label_values = { "prod", "web-1" },
			       .n_labels = 2 };
	struct push_window w = { .kind = PUSH_CPU, .comm = "gunicorn: w", .pid = 42, .from_ns = 1700000000000000000ull, .until_ns = 1700000010000000001ull, .rate_hz = 97 };
	char *q = pyroscope_query(&o, &w);

	CHECK(q && strcmp(q, "/ingest?name=gunicorn__w%7Benv%3Dprod%2Chost"
			     "%3Dweb-1%7D&from=1700000000&until=1700000011"
			     "&format=pprof&sampleRate=97&spyName=pyprof") == 0,
	      "1.1 the query: escaped name, from rounded down, until up");
	free(q);
	o.service_name = "shop/api";
	w.comm = NULL;
	w.until_ns = w.from_ns;
	w.rate_hz = 0;
	q = pyroscope_query(&o, &w);
	CHECK(q && strstr(q, "name=shop%2Fapi%7B") &&
		      strstr(q, "&from=1700000000&until=1700000001&format=pprof"
				"&spyName=pyprof") &&
		      !strstr(q, "sampleRate"),
	      "1.2 --service-name wins; an empty window lasts a second; no "
	      "rate, no sampleRate");
	free(q);
	o.service_name = NULL;
	q = pyroscope_query(&o, &w);
	CHECK(q && strstr(q, "name=pyprof%7B"), "1.3 merged, mixed names: pyprof");
	free(q);
}

static void test_names(void)
{
	char out[64];

	pyroscope_service("python3.11", out, sizeof(out));
	CHECK(strcmp(out, "python3.11") == 0, "2.1 a plain comm is kept");
	pyroscope_service("a b:c", out, sizeof(out));
	CHECK(strcmp(out, "a_b_c") == 0, "2.2 refused characters become _");
	pyroscope_service("@@@", out, sizeof(out));
	CHECK(strcmp(out, "python") == 0, "2.3 nothing left: python");
	CHECK(pyroscope_valid_service("shop/api-v2.1") &&
		      !pyroscope_valid_service("") &&
		      !pyroscope_valid_service("a{b"),
	      "2.4 service names");
	CHECK(pyroscope_valid_label_name("env.zone_1") &&
		      !pyroscope_valid_label_name("__name__") &&
		      !pyroscope_valid_label_name("a-b"),
	      "2.5 label names");
	CHECK(pyroscope_valid_label_value("eu west/1") &&
		      !pyroscope_valid_label_value("a,b") &&
		      !pyroscope_valid_label_value("a}") &&
		      !pyroscope_valid_label_value(" lead") &&
		      !pyroscope_valid_label_value(""),
	      "2.6 label values");
}

/* The form a block or mutex window becomes (pyroscope_form), read back
 * as a server would: the boundary from the Content-Type, the two fields,
 * the profile's bytes intact even when they hold the boundary. */
static void test_form(void)
{
	static const char boundary[] = "--pyprof-waits-6c1f0b9e4d2a";
	char ctype[128], body[200], find[128];
	void *out = NULL;
	size_t len = 0;
	const char *b;

	memset(body, 0x1f, sizeof(body));
	CHECK(pyroscope_form(PUSH_CPU, body, 10, &out, &len) == -EINVAL &&
		      !out,
	      "6.1 a CPU window is not a form");
	CHECK(strcmp(pyroscope_content_type(body, sizeof(body), ctype,
					    sizeof(ctype)),
		     "application/octet-stream") == 0,
	      "6.2 a gzipped profile goes as it is");
	/* the profile holds the boundary (and a CRLF) in its middle */
	memcpy(body + 50, "\r\n", 2);
	memcpy(body + 52, boundary, strlen(boundary));
	CHECK(pyroscope_form(PUSH_BLOCK, body, sizeof(body), &out, &len) == 0,
	      "6.3 a block window is a form");
	b = out;
	pyroscope_content_type(out, len, ctype, sizeof(ctype));
	CHECK(strncmp(ctype, "multipart/form-data; boundary=", 30) == 0,
	      "6.4 the Content-Type says multipart and its boundary");
	snprintf(find, sizeof(find), "\r\n--%s", ctype + 30);
	CHECK(strcmp(ctype + 30, boundary + 2) != 0,
	      "6.5 a boundary the profile holds is not used");
	const char *head = memmem(out, len, "\r\n\r\n", 4);
	const char *field = memmem(out, len, "name=\"profile\"", 14);
	CHECK(len > sizeof(body) && head && field && field < head &&
		      memcmp(head + 4, body, sizeof(body)) == 0 &&
		      memcmp(head + 4 + sizeof(body), find, strlen(find)) == 0,
	      "6.6 the profile's bytes intact in the first field, then the "
	      "boundary");
	CHECK(memmem(out, len, "\"block_count\"", 13) &&
		      memmem(out, len, "\"block_duration\"", 16) &&
		      memmem(out, len, "lock_nanoseconds", 16) &&
		      !memmem(out, len, "mutex", 5),
	      "6.7 sample_type_config: the Go SDK's block names and units");
	strcat(find, "--\r\n");
	CHECK(len > strlen(find) &&
		      memcmp(b + len - strlen(find), find, strlen(find)) == 0,
	      "6.8 the form ends with its closing boundary");
	free(out);
	out = NULL;
	CHECK(pyroscope_form(PUSH_MUTEX, body, 10, &out, &len) == 0 &&
		      memmem(out, len, "\"mutex_duration\"", 16) &&
		      !memmem(out, len, "block", 5),
	      "6.9 a mutex window's names");
	free(out);
	CHECK(strcmp(pyroscope_content_type("--a b\r\n", 7, ctype,
					    sizeof(ctype)),
		     "application/octet-stream") == 0 &&
		      strcmp(pyroscope_content_type("--a\nX: y\r\n", 10, ctype,
						    sizeof(ctype)),
			     "application/octet-stream") == 0,
	      "6.10 a spooled body that is not our form adds no header");
}

static void test_otlp_query(void)
{
	struct push_opts o = { .label_keys = { "host", "env" },
			       .label_values = { "h1", "a&b=c" },
			       .n_labels = 2 };
	struct push_window w = { .comm = "worker", .pid = 7 };
	char *q = otlp_request_query(&o, &w);
	char err[128] = "";
	void *out = NULL;
	size_t len = 0;

	CHECK(q && strcmp(q, "/v1development/profiles?s=worker&p=7"
			     "&a=host%3Dh1&a=env%3Da%26b%3Dc") == 0,
	      "3.1 the OTLP resource kept in the query, escaped");
	CHECK(otlp_request_body(q, "not gzip", 8, &out, &len, err,
				sizeof(err)) == -EINVAL &&
		      err[0],
	      "3.2 a body that is not a profile: -EINVAL with a reason");
	CHECK(otlp_request_body("/v1development/profiles?x=1", "", 0, &out,
				&len, err, sizeof(err)) == -EINVAL,
	      "3.3 an unreadable resource: -EINVAL");
	free(q);
}

static void test_opts(void)
{
	struct push_opts o = { .spool_max = 1 };
	char err[512];

	CHECK(push_opts_set(&o, "pyroscope", "http://h:4040/p/", err,
			    sizeof(err)) == 0 &&
		      strcmp(o.pyroscope_url, "http://h:4040/p") == 0,
	      "4.1 a URL, its trailing / dropped");
	CHECK(push_opts_set(&o, "otlp", "h:4318", err, sizeof(err)) < 0 &&
		      strstr(err, "--otlp wants http://"),
	      "4.2 a URL needs a scheme");
	CHECK(push_opts_set(&o, "push-label", "k=v", err, sizeof(err)) == 0 &&
		      push_opts_set(&o, "push-label", "k=w", err, sizeof(err)) < 0 &&
		      strstr(err, "given twice"),
	      "4.3 a label once");
	CHECK(push_opts_set(&o, "push-header", "X-Scope-OrgID: t", err,
			    sizeof(err)) == 0 &&
		      push_opts_set(&o, "push-header", "Bad Header: x", err,
				    sizeof(err)) < 0,
	      "4.4 headers");
	CHECK(push_opts_check(&o, 0, err, sizeof(err)) == 0 &&
		      strcmp(o.label_keys[o.n_labels - 1], "host") == 0,
	      "4.5 host added");
	push_opts_free(&o);
	CHECK(o.n_labels == 0 && !o.pyroscope_url, "4.6 freed");
}

/* ---- the spool ---------------------------------------------------------- */

static uint64_t body_seq(struct spool *s, uint64_t seq)
{
	struct spool_item it;
	uint64_t v = 0;
	if (spool_read(s, seq, &it) < 0)
		return 0;
	if (it.len == sizeof(v))
		memcpy(&v, it.body, sizeof(v));
	spool_item_free(&it);
	return v;
}

static void test_spool(const char *dir)
{
	char err[256], path[512];
	struct spool *s = spool_open(dir, 1160, err, sizeof(err)), *s2;
	uint64_t bytes, dropped;
	size_t n;
	struct stat st;

	CHECK_OR_RETURN(s != NULL, "5.1 the spool opens", );
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700,
	      "5.2 made 0700");
	s2 = spool_open(dir, 1160, err, sizeof(err));
	CHECK(!s2 && strstr(err, "used by another collector"),
	      "5.3 locked against a second user");
	spool_close(s2);
	/* Each window: 14 + 10 + 9 + 17 + 8 = 58 bytes; 1160 holds 20. Added
	 * out of order, as the loop's spill and the thread may. */
	for (uint64_t i = 1; i <= 30; i++) {
		uint64_t seq = i % 2 ? i : i + 1000;
		CHECK(spool_add(s, seq, "pyroscope", "http://h", "/ingest?name=x{}",
				&seq, sizeof(seq)) == 0,
		      "5.4 added");
	}
	spool_usage(s, &n, &bytes);
	dropped = spool_take_dropped(s, &bytes);
	CHECK(n == 20 && dropped == 10, "5.5 twenty kept, ten dropped");
	CHECK(spool_oldest(s) == 21, "5.6 the oldest went first (1..19 odd, "
				     "the small numbers)");
	CHECK(body_seq(s, 21) == 21, "5.7 read back");
	spool_remove(s, 21);
	CHECK(spool_oldest(s) == 23, "5.8 then the next");
	spool_close(s);
	/* A crash: reopened, the same windows, numbering goes on. */
	s = spool_open(dir, 1160, err, sizeof(err));
	CHECK_OR_RETURN(s != NULL, "5.9 reopened", );
	spool_usage(s, &n, &bytes);
	CHECK(n == 19 && spool_oldest(s) == 23 && spool_last_seq(s) == 1030,
	      "5.10 the windows and the last number survive");
	snprintf(path, sizeof(path), "%s/%016x.push", dir, 23);
	int fd = open(path, O_WRONLY | O_TRUNC);
	if (fd >= 0) {
		CHECK(write(fd, "garbage", 7) == 7, "5.11 corrupted");
		close(fd);
	}
	struct spool_item it;
	CHECK(spool_read(s, 23, &it) == -EINVAL && spool_oldest(s) == 25,
	      "5.12 a corrupt window is refused and set aside");
	snprintf(path, sizeof(path), "%s/%016x.push.rejected", dir, 23);
	CHECK(access(path, F_OK) == 0 && spool_take_set_aside(s) == 1,
	      "5.12b kept aside as .rejected, and counted");
	static char big[2000];
	CHECK(spool_add(s, 5000, "pyroscope", "http://h", "/q", big,
			sizeof(big)) ==
			      -EFBIG &&
		      spool_take_dropped(s, &bytes) == 1,
	      "5.13 too big: not kept, "
	      "counted");
	spool_close(s);
}

/* ---- a spool another user had a hand in: never trusted, never followed -- */

static void write_file(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		if (write(fd, text, len) != (ssize_t)len)
			fprintf(stderr, "short write to %s\n", path);
		close(fd);
	}
}

static void test_spool_hostile(const char *base)
{
	char dir[256], path[512], err[4400];
	struct spool *s;
	struct spool_item it;
	uint64_t bytes;
	size_t n;

	/* 7.1-7.3: the directory itself. */
	snprintf(dir, sizeof(dir), "%s/ww", base);
	mkdir(dir, 0700);
	chmod(dir, 0777);
	s = spool_open(dir, 1 << 20, err, sizeof(err));
	CHECK(!s && strstr(err, "refusing spool directory") &&
		      strstr(err, "writable by others (mode 0777)") &&
		      strstr(err, "--spool-dir"),
	      "7.1 a world-writable spool "
	      "directory is refused with one line saying what to do");
	spool_close(s);
	CHECK(chown(dir, 65534, 65534) == 0 && chmod(dir, 0700) == 0,
	      "7.2 (chown to nobody: the tests run as root)");
	s = spool_open(dir, 1 << 20, err, sizeof(err));
	CHECK(!s && strstr(err, "owned by uid 65534"), "7.2 another user's "
						       "spool directory is refused");
	spool_close(s);
	snprintf(path, sizeof(path), "%s/link", base);
	CHECK(symlink(dir, path) == 0, "7.3 (a link)");
	s = spool_open(path, 1 << 20, err, sizeof(err));
	CHECK(!s && strstr(err, "it is a symbolic link"), "7.3 a symbolic "
							  "link at the spool's name is not followed");
	spool_close(s);

	/* 7.4-7.7: files put in our own spool. */
	snprintf(dir, sizeof(dir), "%s/own", base);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/ffffffffffffffff.push", dir);
	write_file(path, "pyprof-push 2\npyroscope\nhttp://h\n/ingest?x\nB",
		   43);
	snprintf(path, sizeof(path), "%s/0000000000000002.push", dir);
	write_file(path, "", 0);
	CHECK(truncate(path, 300 << 20) == 0, "7.4 (a sparse 300 MiB file)");
	snprintf(path, sizeof(path), "%s/0000000000000003.push", dir);
	write_file(path, "pyprof-push 1\npyroscope\n/ingest?a\rb\nB", 36);
	snprintf(path, sizeof(path), "%s/0000000000000004.push", dir);
	CHECK(mkfifo(path, 0600) == 0, "7.5 (a FIFO)");
	s = spool_open(dir, 1 << 20, err, sizeof(err));
	CHECK_OR_RETURN(s != NULL, "7.4 our own spool opens", );
	CHECK(spool_last_seq(s) == 4 && spool_oldest(s) == 3,
	      "7.4 a number past SPOOL_SEQ_MAX and a file bigger than the "
	      "spool are set aside at open: numbering goes on from 4");
	spool_usage(s, &n, &bytes);
	CHECK(n == 2 && bytes < 100 && spool_take_set_aside(s) == 2,
	      "7.4 neither counts in the spool; both are counted aside");
	CHECK(spool_read(s, 3, &it) == -EINVAL && spool_oldest(s) == 4,
	      "7.6 a request path with a CR: set aside, the next one is up");
	CHECK(spool_read(s, 4, &it) == -EINVAL && spool_oldest(s) == 0,
	      "7.5 a FIFO is set aside at once, not waited on");
	snprintf(path, sizeof(path), "%s/0000000000000004.push.rejected", dir);
	CHECK(access(path, F_OK) == 0, "7.5 kept as .rejected");
	CHECK(spool_add(s, 5, "pyroscope", "http://h", "/ingest?y", "B", 1) ==
			      0 &&
		      spool_read(s, 5, &it) == 0 &&
		      strcmp(it.url, "http://h") == 0 &&
		      strcmp(it.query, "/ingest?y") == 0,
	      "7.7 a window keeps the "
	      "URL it was made for");
	spool_item_free(&it);
	spool_close(s);
}

int main(void)
{
	char dir[] = "/tmp/test_push.XXXXXX", sub[64], cmd[128];

	test_query();
	test_names();
	test_otlp_query();
	test_form();
	test_opts();
	if (mkdtemp(dir)) {
		snprintf(sub, sizeof(sub), "%s/a/spool", dir);
		test_spool(sub);
		test_spool_hostile(dir);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return check_summary();
}
