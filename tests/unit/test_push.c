/*
 * test_push.c - the push pipeline's pure parts: the Pyroscope /ingest
 * query (pyroscope.h), the OTLP request's query (otlp_request.h), the
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
	struct push_window w = { .kind = PUSH_CPU, .comm = "gunicorn: w",
				 .pid = 42, .from_ns = 1700000000000000000ull,
				 .until_ns = 1700000010000000001ull,
				 .rate_hz = 97 };
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
		     "&spyName=pyprof") && !strstr(q, "sampleRate"),
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
	      !pyroscope_valid_service("a{b"), "2.4 service names");
	CHECK(pyroscope_valid_label_name("env.zone_1") &&
	      !pyroscope_valid_label_name("__name__") &&
	      !pyroscope_valid_label_name("a-b"), "2.5 label names");
	CHECK(pyroscope_valid_label_value("eu west/1") &&
	      !pyroscope_valid_label_value("a,b") &&
	      !pyroscope_valid_label_value("a}") &&
	      !pyroscope_valid_label_value(" lead") &&
	      !pyroscope_valid_label_value(""), "2.6 label values");
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
				sizeof(err)) == -EINVAL && err[0],
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
	      strstr(err, "--otlp wants http://"), "4.2 a URL needs a scheme");
	CHECK(push_opts_set(&o, "push-label", "k=v", err, sizeof(err)) == 0 &&
	      push_opts_set(&o, "push-label", "k=w", err, sizeof(err)) < 0 &&
	      strstr(err, "given twice"), "4.3 a label once");
	CHECK(push_opts_set(&o, "push-header", "X-Scope-OrgID: t", err,
			    sizeof(err)) == 0 &&
	      push_opts_set(&o, "push-header", "Bad Header: x", err,
			    sizeof(err)) < 0, "4.4 headers");
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
	struct spool *s = spool_open(dir, 1000, err, sizeof(err)), *s2;
	uint64_t bytes, dropped;
	size_t n;
	struct stat st;

	CHECK_OR_RETURN(s != NULL, "5.1 the spool opens", );
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700,
	      "5.2 made 0700");
	s2 = spool_open(dir, 1000, err, sizeof(err));
	CHECK(!s2 && strstr(err, "used by another collector"),
	      "5.3 locked against a second user");
	spool_close(s2);
	/* Each window: 14 + 10 + 17 + 8 = 49 bytes; 1000 holds 20. Added
	 * out of order, as the loop's spill and the thread may. */
	for (uint64_t i = 1; i <= 30; i++) {
		uint64_t seq = i % 2 ? i : i + 1000;
		CHECK(spool_add(s, seq, "pyroscope", "/ingest?name=x{}", &seq,
				sizeof(seq)) == 0, "5.4 added");
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
	s = spool_open(dir, 1000, err, sizeof(err));
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
	      "5.12 a corrupt window is refused and removed");
	static char big[2000];
	CHECK(spool_add(s, 5000, "pyroscope", "/q", big, sizeof(big)) ==
		      -EFBIG &&
	      spool_take_dropped(s, &bytes) == 1, "5.13 too big: not kept, "
	      "counted");
	spool_close(s);
}

int main(void)
{
	char dir[] = "/tmp/test_push.XXXXXX", sub[64], cmd[128];

	test_query();
	test_names();
	test_otlp_query();
	test_opts();
	if (mkdtemp(dir)) {
		snprintf(sub, sizeof(sub), "%s/a/spool", dir);
		test_spool(sub);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return check_summary();
}
