/*
 * tests/sigsafe/signal/handler.c - a fixture for `make check-sigsafe`: a
 * "signal handler" whose call path reaches malloc two calls away, in
 * another file (helper.c). tools/check-sigsafe must reject it, or the
 * check could not fail. Never linked into anything.
 */
void fixture_helper(void);
void fixture_handler(int sig);

void fixture_handler(int sig)
{
	(void)sig;
	fixture_helper();
}
