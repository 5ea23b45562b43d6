/*
 * fakepy.c - a program that looks like some Python to libpyprof.so, for
 * the tests of what the library refuses (tests/e2e/versions.bats).
 *
 * It exports the entry points the library looks up in the global scope
 * (built with -rdynamic), with Py_GetVersion answering $FAKEPY_VERSION.
 * -DDEBUG_BUILD adds a debug-build marker, -DFREE_THREADED a free-threaded
 * one, -DPYPY exports only PyPy's marker. The interpreter never becomes
 * initialized. It prints one line and exits with status 3.
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef PYPY
void pypy_setup_home(void);
void pypy_setup_home(void) {}
#else
const char *Py_GetVersion(void);
void *PyInterpreterState_Head(void);
int Py_IsInitialized(void);

const char *Py_GetVersion(void)
{
	const char *v = getenv("FAKEPY_VERSION");
	return v ? v : "3.11.7 (fake)";
}
void *PyInterpreterState_Head(void) { return NULL; }
int Py_IsInitialized(void) { return 0; }
char PyCode_Type[512];
#endif
#ifdef DEBUG_BUILD
void _Py_NegativeRefcount(void);
void _Py_NegativeRefcount(void) {}
#endif
#ifdef FREE_THREADED
void _Py_MergeZeroLocalRefcount(void);
void _Py_MergeZeroLocalRefcount(void) {}
#endif

int main(void)
{
	puts("fake python ran");
	return 3;
}
