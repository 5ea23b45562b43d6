/*
 * tests/sigsafe/helper.c - the fixture's helper (see signal/handler.c): a
 * function outside the checked folder, not named *_sigsafe, whose static
 * callee allocates: both are errors.
 */
#include <stdlib.h>

void fixture_helper(void);
void *volatile fixture_keep;

__attribute__((noinline)) static void grow(void)
{
	fixture_keep = malloc(64);
}

void fixture_helper(void)
{
	grow();
}
