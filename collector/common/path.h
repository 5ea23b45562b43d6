/*
 * path.h - a path's directory and base name, as the collector needs them
 * to check, create or fsync the directory a file goes into.
 *
 * Header only; any thread (no state).
 */
#ifndef PYPROF_PATH_H
#define PYPROF_PATH_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Writes path's directory into dir (cap bytes, cut to fit): "." for a
 * bare name, "/" for a name at the root. Returns the base name (the
 * part after the last slash, inside path). */
static inline const char *path_split(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, cap, ".");
		return path;
	}
	if (slash == path)
		snprintf(dir, cap, "/");
	else
		snprintf(dir, cap, "%.*s", (int)(slash - path), path);
	return slash + 1;
}

#endif /* PYPROF_PATH_H */
