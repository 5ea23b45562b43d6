/*
 * oldcond.c - a program bound to glibc's old condition variables
 * (pthread_cond_*@GLIBC_2.2.5, as programs linked against glibc before
 * 2.3.2 are), for tests/e2e/hostile.bats: with the library preloaded it
 * must behave as without it. A thread waits (timed, 5 s) on an old
 * condition that the main thread broadcasts and signals after 50 ms; the
 * bytes after
 * the condition must stay as they were. Prints "woken" and exits 0, or
 * says what went wrong and exits 1.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__asm__(".symver old_timedwait, pthread_cond_timedwait@GLIBC_2.2.5");
__asm__(".symver old_signal, pthread_cond_signal@GLIBC_2.2.5");
__asm__(".symver old_broadcast, pthread_cond_broadcast@GLIBC_2.2.5");
__asm__(".symver old_init, pthread_cond_init@GLIBC_2.2.5");
int old_timedwait(void *c, pthread_mutex_t *m, const struct timespec *t);
int old_signal(void *c);
int old_broadcast(void *c);
int old_init(void *c, const void *attr);

/* The old condition is smaller than pthread_cond_t: what follows it must
 * not be written. */
static struct {
	unsigned char cond[48];
	unsigned char guard[64];
} mem;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int ready, rc = -1;

static void *waiter(void *arg)
{
	struct timespec t;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 5;
	pthread_mutex_lock(&mu);
	ready = 1;
	rc = old_timedwait(mem.cond, &mu, &t);
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(void)
{
	pthread_t th;

	memset(mem.guard, 0xa5, sizeof mem.guard);
	old_init(mem.cond, NULL);
	pthread_create(&th, NULL, waiter, NULL);
	for (;;) {
		pthread_mutex_lock(&mu);
		int r = ready;
		pthread_mutex_unlock(&mu);
		if (r)
			break;
		usleep(1000);
	}
	usleep(50000);
	pthread_mutex_lock(&mu);
	/* broadcast too, which the library does not wrap: the old ABI's
	 * functions must all see the same (old) condition */
	old_broadcast(mem.cond);
	old_signal(mem.cond);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	for (size_t i = 0; i < sizeof mem.guard; i++)
		if (mem.guard[i] != 0xa5) {
			printf("the bytes after the condition were written\n");
			return 1;
		}
	if (rc != 0) {
		printf("the wait was not woken: %s\n", strerror(rc));
		return 1;
	}
	printf("woken\n");
	return 0;
}
