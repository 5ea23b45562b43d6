/*
 * test_log.c - the collector's log lines (collector/common/log.h): what
 * log_printable lets through of a name a client sent, and the per-party
 * rate limit (struct log_budget): a burst, then lines suppressed and
 * counted, and the one line that says how many.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/log.h"

/* 1. Names a client sent: nothing a terminal acts on gets through. */
static void printable_test(void)
{
	char buf[64];
	log_printable(buf, sizeof(buf), "a\x1b[2Jb\nc\x7f", 10);
	CHECK(strcmp(buf, "a?[2Jb?c?") == 0, "1.1 C0 and DEL become '?'");
	log_printable(buf, sizeof(buf), "x\xc2\x9b"
					"31my",
		      8);
	CHECK(strcmp(buf, "x?31my") == 0, "1.2 a C1 CSI (U+009B) becomes '?'");
	log_printable(buf, sizeof(buf), "r\xe2\x80\xaegnp.exe", 11);
	CHECK(strcmp(buf, "r?gnp.exe") == 0, "1.3 a bidi override becomes '?'");
	log_printable(buf, sizeof(buf), "caf\xc3\xa9 \xe2\x80\xa6", 9);
	CHECK(strcmp(buf, "caf\xc3\xa9 \xe2\x80\xa6") == 0,
	      "1.4 other UTF-8 text is kept");
	log_printable(buf, 4, "abcdef", 6);
	CHECK(strcmp(buf, "abc") == 0, "1.5 cut to the buffer");
}

static size_t count_lines(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* 2. A budget: LOG_BUDGET_BURST lines go out, the rest are counted and
 * said in one line once the party may log again. */
static void budget_test(void)
{
	char path[] = "/tmp/test_log.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	CHECK(fd >= 0 && saved >= 0, "2.0 a log file");
	if (fd < 0 || saved < 0)
		return;
	unlink(path);
	dup2(fd, 2);
	struct log_budget b = { 0 };
	snprintf(b.who, sizeof(b.who), "uid 4242");
	struct log_budget *was = log_charge(&b);
	for (int i = 0; i < LOG_BUDGET_BURST + 50; i++)
		log_info("client line %d", i);
	log_charge(was);
	log_info("a line of our own");
	log_budget_report(&b); /* no room yet: says nothing */
	b.refill_ns = 0;       /* as after a while: room again */
	log_budget_report(&b);
	dup2(saved, 2);
	close(saved);
	static char text[65536];
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	CHECK(count_lines(text, "client line") == LOG_BUDGET_BURST,
	      "2.1 a burst of lines goes out");
	CHECK(count_lines(text, "a line of our own") == 1,
	      "2.2 lines charged to no one are not limited");
	CHECK(count_lines(text, "uid 4242: 50 log lines about its clients "
				"suppressed") == 1,
	      "2.3 one line says how many were suppressed");
	CHECK(b.suppressed == 0, "2.4 and the count starts again");
}

int main(void)
{
	printable_test();
	budget_test();
	return check_summary();
}
