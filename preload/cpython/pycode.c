/*
 * pycode.c - line-table and string decoders (see pycode.h for the
 * contract). Pure functions: no globals, no allocation, bounded loops.
 *
 * Runs on the agent thread, once per new (code object, offset) pair the
 * symbolizer has not cached, so it favours obvious bounds checks over
 * speed: every table walk is one pass over at most len bytes, and strings
 * are read in 512-byte chunks.
 *
 * The line-table walks mirror CPython's own (PyCode_Addr2Line in
 * Objects/codeobject.c of each version; the formats are described in
 * Objects/lnotab_notes.txt and, for 3.11+, InternalDocs/locations.md) and
 * are checked against each installed interpreter's answers by
 * tests/versions/linetable.sh.
 */
#include "pycode.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* ---- line tables ---- */

static int line_or_none(int64_t line)
{
	return (line < 0 || line > INT_MAX) ? -1 : (int)line;
}

/*
 * <= 3.9 co_lnotab: (address delta, line delta) byte pairs from
 * (0, co_firstlineno). A pair applies while the running address is
 * <= the offset. 2.7 line deltas are unsigned; 3.6 made them signed
 * (bpo-26107), so a pair 0x10 0xfe means "16 bytes on, two lines back".
 * A trailing odd byte is ignored, as CPython does (size / 2 pairs).
 */
static int lnotab_line(const uint8_t *t, size_t len, int firstlineno,
		       uint32_t off, int signed_lines)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += signed_lines ? (int8_t)t[i + 1] : t[i + 1];
	}
	return line_or_none(line);
}

/*
 * 3.10 co_linetable (PEP 626): (start delta, line delta) byte pairs; each
 * pair covers the next `start delta` bytes of code. The line delta is
 * signed and -128 means "no line" for that range without moving the
 * running line. Empty ranges (start delta 0) still move the line: a jump of
 * more than 127 lines is spread over several pairs.
 */
static int linetable310_line(const uint8_t *t, size_t len, int firstlineno,
			     uint32_t off)
{
	int64_t computed = firstlineno, line;
	uint64_t start, end = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int8_t ldelta = (int8_t)t[i + 1];

		start = end;
		end += t[i];
		if (ldelta == -128) {
			line = -1;
		} else {
			computed += ldelta;
			line = computed;
		}
		if (start <= off && off < end)
			return line_or_none(line);
	}
	return -1;
}

/*
 * 3.11+ varint: 6-bit groups, least significant first, bit 6 = another
 * group follows. Bits past 32 are dropped (CPython would shift out of its
 * unsigned int; real tables never get there). Stops at len.
 */
static uint32_t read_varint(const uint8_t *t, size_t len, size_t *pos)
{
	uint32_t val;
	unsigned shift = 0;
	uint8_t b;

	if (*pos >= len)
		return 0;
	b = t[(*pos)++];
	val = b & 63;
	while ((b & 64) && *pos < len) {
		b = t[(*pos)++];
		shift += 6;
		if (shift < 32)
			val |= (uint32_t)(b & 63) << shift;
	}
	return val;
}

/* Signed varint: the sign in bit 0, the magnitude above it. */
static int64_t read_svarint(const uint8_t *t, size_t len, size_t *pos)
{
	uint32_t u = read_varint(t, len, pos);

	return (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

/* Location-entry codes, bits 3-6 of an entry's first byte. */
enum {
	LOC_ONE_LINE0 = 10,  /* line delta 0, then two column bytes       */
	LOC_ONE_LINE2 = 12,  /* line delta 2 (11: delta 1)                 */
	LOC_NO_COLUMNS = 13, /* signed varint line delta                  */
	LOC_LONG = 14,	     /* signed varint line delta, then 3 varints   */
	LOC_NONE = 15	     /* no location: line -1, running line kept    */
};

/*
 * 3.11+ location table: entries that each start with a byte whose bit 7
 * is set; bits 0-2 are the entry's length in code units minus one, bits
 * 3-6 the code. Codes 0-9 (short form) keep the line. The rest of an
 * entry (columns) is skipped by looking for the next byte with bit 7 set,
 * exactly as CPython's advance() does, so a garbled entry can only
 * misplace us, never stall us: each step eats at least one byte.
 */
static int loctable_line(const uint8_t *t, size_t len, int firstlineno,
			 uint32_t off)
{
	int64_t computed = firstlineno, line;
	uint64_t start, end = 0;
	size_t p = 0;

	while (p < len) {
		uint8_t head = t[p];
		int code = head >> 3 & 15;
		size_t q = p + 1;

		if (code == LOC_LONG || code == LOC_NO_COLUMNS)
			computed += read_svarint(t, len, &q);
		else if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
			computed += code - LOC_ONE_LINE0;
		/* Only a proper header (bit 7 set) with code 15 means
		 * "no line": CPython tests head >> 3 == 0x1f. */
		line = (head >> 3) == (0x10 | LOC_NONE) ? -1 : computed;
		start = end;
		end += ((uint64_t)(head & 7) + 1) * 2;
		if (start <= off && off < end)
			return line_or_none(line);
		p++;
		while (p < len && !(t[p] & 128))
			p++;
	}
	return -1;
}

int pycode_addr2line(int lines_kind, const uint8_t *table, size_t len,
		     int firstlineno, uint32_t byte_offset)
{
	if (!table && len > 0)
		return -1;
	switch (lines_kind) {
	case PYABI_LINES_LNOTAB27:
		return lnotab_line(table, len, firstlineno, byte_offset, 0);
	case PYABI_LINES_LNOTAB:
		return lnotab_line(table, len, firstlineno, byte_offset, 1);
	case PYABI_LINES_310:
		return linetable310_line(table, len, firstlineno, byte_offset);
	case PYABI_LINES_311:
		return loctable_line(table, len, firstlineno, byte_offset);
	default:
		return -1;
	}
}

/* ---- strings ---- */

/* Py_ssize_t has the size of a pointer on every platform CPython runs on. */
typedef intptr_t py_ssize;

/* Lengths beyond this are garbage, not strings (1 TiB of characters). */
#define PYCODE_LEN_ABSURD ((int64_t)1 << 40)

static int read_at(int (*read)(void *, const void *, size_t), void *dst,
		   uintptr_t addr, size_t n)
{
	return read(dst, (const void *)addr, n) ? -EFAULT : 0;
}

/*
 * Bytes (2.7 names): copies min(size, out_cap - 1, max) bytes, then, if it
 * had to cut, drops a trailing UTF-8 sequence that the cut left
 * incomplete, so a UTF-8 file name is never split inside a character.
 */
static int read_bytes_str(const struct pyabi *abi, uintptr_t obj,
			  int (*read)(void *, const void *, size_t),
			  char *out, size_t out_cap)
{
	py_ssize size;
	size_t n, lead, want, k;
	int rc;

	rc = read_at(read, &size, obj + (uintptr_t)abi->var_size, sizeof(size));
	if (rc)
		return rc;
	if (size < 0 || (int64_t)size > PYCODE_LEN_ABSURD)
		return -EINVAL;
	n = (size_t)size;
	if (n > PYCODE_STR_MAX_CHARS)
		n = PYCODE_STR_MAX_CHARS;
	if (n > out_cap - 1)
		n = out_cap - 1;
	rc = read_at(read, out, obj + (uintptr_t)abi->bytes_sval, n);
	if (rc)
		return rc;
	if (n < (size_t)size && n > 0) {
		/* Find the lead byte of the last sequence (at most 3
		 * continuation bytes back) and its expected length. */
		k = 0;
		while (k < 3 && k < n && ((uint8_t)out[n - 1 - k] & 0xc0) == 0x80)
			k++;
		if (k < n) {
			lead = (uint8_t)out[n - 1 - k];
			want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3
					  : lead >= 0xc0       ? 2
							       : 1;
			if (want > k + 1)
				n -= k + 1;
		}
	}
	out[n] = '\0';
	return (int)n;
}

/* Bytes UTF-8 needs for cp (cp already <= 0x10ffff, no surrogates). */
static size_t utf8_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2
		       : cp < 0x10000	  ? 3
					  : 4;
}

static void utf8_put(char *o, uint32_t cp, size_t n)
{
	switch (n) {
	case 1:
		o[0] = (char)cp;
		break;
	case 2:
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		break;
	case 3:
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		break;
	default:
		o[0] = (char)(0xf0 | cp >> 18);
		o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[3] = (char)(0x80 | (cp & 0x3f));
		break;
	}
}

/*
 * PEP 393 (3.3+). The header is PyASCIIObject: ob_refcnt, ob_type, length
 * (characters), hash, the state bitfield. Where the characters are:
 *   compact and ascii   right after PyASCIIObject        (most names)
 *   compact, not ascii  right after PyCompactUnicodeObject
 *   not compact         at PyUnicodeObject.data.any      (str subclasses,
 *                       3.3-3.11 PyUnicode_FromUnicode(NULL, n) strings)
 * The headers shrank in 3.12 when wstr went away (PEP 623), which the row's
 * sizes account for.
 */
/* Where a str's characters are and how they are stored. */
struct ustr {
	uintptr_t data; /* the first character */
	size_t n_chars; /* its length, capped at PYCODE_STR_MAX_CHARS */
	unsigned kind;	/* bytes per character: 1, 2 or 4 */
	/* every character below 0x80 */
	int ascii;
};

/* Reads the header of the str at obj into *u. 0, or a negative errno
 * number (-EINVAL: the row or the header makes no sense). */
static int read_unicode_header(const struct pyabi *abi, uintptr_t obj,
			       int (*read)(void *, const void *, size_t),
			       struct ustr *u)
{
	uint8_t hdr[64];
	size_t hdr_len;
	uint32_t state;
	int compact, ascii, rc;
	py_ssize length;

	/* The row must be sane before we use it to index hdr. */
	if (abi->u_length < 0 || abi->u_state < 0 || abi->u_kind_shift < 0 ||
	    abi->u_kind_shift > 29 || abi->u_compact_bit < 0 ||
	    abi->u_compact_bit > 31 || abi->u_ascii_bit < 0 ||
	    abi->u_ascii_bit > 31 || abi->u_ascii_size < 0 ||
	    abi->u_compact_size < 0 || abi->u_data_any < 0)
		return -EINVAL;
	hdr_len = (size_t)abi->u_state + 4;
	if ((size_t)abi->u_length + sizeof(py_ssize) > hdr_len)
		hdr_len = (size_t)abi->u_length + sizeof(py_ssize);
	if (hdr_len > sizeof(hdr))
		return -EINVAL;
	rc = read_at(read, hdr, obj, hdr_len);
	if (rc)
		return rc;

	memcpy(&length, hdr + abi->u_length, sizeof(length));
	/* Assemble the bitfield byte by byte: bit n is bit n % 8 of byte
	 * n / 8, the numbering tools/pyabi_probe.c uses. */
	state = (uint32_t)hdr[abi->u_state] |
		(uint32_t)hdr[abi->u_state + 1] << 8 |
		(uint32_t)hdr[abi->u_state + 2] << 16 |
		(uint32_t)hdr[abi->u_state + 3] << 24;
	u->kind = state >> abi->u_kind_shift & 7;
	compact = state >> abi->u_compact_bit & 1;
	ascii = state >> abi->u_ascii_bit & 1;
	if (length < 0 || (int64_t)length > PYCODE_LEN_ABSURD)
		return -EINVAL;
	if (u->kind != 1 && u->kind != 2 && u->kind != 4)
		return -EINVAL; /* 0 is <= 3.11's PyUnicode_WCHAR_KIND: not ready */
	if (ascii && u->kind != 1)
		return -EINVAL;
	u->ascii = ascii;

	if (compact) {
		u->data = obj + (uintptr_t)(ascii ? abi->u_ascii_size
						  : abi->u_compact_size);
	} else {
		rc = read_at(read, &u->data, obj + (uintptr_t)abi->u_data_any,
			     sizeof(u->data));
		if (rc)
			return rc;
		if (!u->data)
			return -EINVAL;
	}
	u->n_chars = (size_t)length;
	if (u->n_chars > PYCODE_STR_MAX_CHARS)
		u->n_chars = PYCODE_STR_MAX_CHARS;
	return 0;
}

/* Appends code point cp to out (*pos bytes used of out_cap, one kept for
 * the NUL) as UTF-8. 0, or -1 when it does not fit. */
static int put_code_point(uint32_t cp, char *out, size_t out_cap,
			  size_t *pos)
{
	size_t w;

	if (cp >= 0xdc80 && cp <= 0xdcff) {
		/* surrogateescape (a file name decoded in the C locale, 3.6):
		 * give back the original byte, as os.fsencode would */
		if (*pos + 1 > out_cap - 1)
			return -1;
		out[(*pos)++] = (char)(cp & 0xff);
		return 0;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd; /* a lone surrogate: a str may hold one */
	w = utf8_len(cp);
	if (*pos + w > out_cap - 1)
		return -1;
	utf8_put(out + *pos, cp, w);
	*pos += w;
	return 0;
}

static int read_unicode_str(const struct pyabi *abi, uintptr_t obj,
			    int (*read)(void *, const void *, size_t),
			    char *out, size_t out_cap)
{
	uint8_t chunk[512];
	struct ustr u;
	size_t done, take, i, pos = 0;
	uint32_t cp;
	int rc = read_unicode_header(abi, obj, read, &u);

	if (rc)
		return rc;
	for (done = 0; done < u.n_chars; done += take) {
		take = u.n_chars - done;
		if (take > sizeof(chunk) / u.kind)
			take = sizeof(chunk) / u.kind;
		rc = read_at(read, chunk, u.data + done * u.kind,
			     take * u.kind);
		if (rc)
			return rc;
		for (i = 0; i < take; i++) {
			if (u.kind == 1) {
				cp = chunk[i];
			} else if (u.kind == 2) {
				uint16_t c16;

				memcpy(&c16, chunk + 2 * i, 2);
				cp = c16;
			} else {
				memcpy(&cp, chunk + 4 * i, 4);
			}
			/* no str holds these: memory that is no longer the
			 * str (freed, reused) rather than a name */
			if ((u.ascii && cp >= 0x80) || cp > 0x10ffff)
				return -EINVAL;
			if (put_code_point(cp, out, out_cap, &pos) < 0)
				goto full;
		}
	}
full:
	out[pos] = '\0';
	return (int)pos;
}

int pycode_read_str(const struct pyabi *abi, const void *str_obj,
		    int (*read)(void *dst, const void *src, size_t n),
		    char *out, size_t out_cap)
{
	int rc;

	if (!out || out_cap == 0)
		return -EINVAL;
	out[0] = '\0';
	if (!abi || !read) {
		rc = -EINVAL;
		goto out;
	}
	if (!str_obj) {
		rc = -EFAULT;
		goto out;
	}
	if (out_cap > (size_t)INT_MAX)
		out_cap = (size_t)INT_MAX;
	if (abi->str_kind == PYABI_STR_BYTES) {
		if (abi->var_size < 0 || abi->bytes_sval < 0)
			rc = -EINVAL;
		else
			rc = read_bytes_str(abi, (uintptr_t)str_obj, read, out,
					    out_cap);
	} else if (abi->str_kind == PYABI_STR_UNICODE) {
		rc = read_unicode_str(abi, (uintptr_t)str_obj, read, out,
				      out_cap);
	} else {
		rc = -EINVAL;
	}
out:
	if (rc < 0)
		out[0] = '\0';
	return rc;
}

int pycode_read_bytes(const struct pyabi *abi, const void *bytes_obj,
		      int (*read)(void *dst, const void *src, size_t n),
		      uint8_t *out, size_t out_cap)
{
	py_ssize size;
	int rc;

	if (!abi || !read || (!out && out_cap > 0) || abi->var_size < 0 ||
	    abi->bytes_sval < 0)
		return -EINVAL;
	if (!bytes_obj)
		return -EFAULT;
	rc = read_at(read, &size, (uintptr_t)bytes_obj + (uintptr_t)abi->var_size,
		     sizeof(size));
	if (rc)
		return rc;
	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > out_cap || (uint64_t)size > INT_MAX)
		return -E2BIG;
	if (size == 0)
		return 0;
	rc = read_at(read, out, (uintptr_t)bytes_obj + (uintptr_t)abi->bytes_sval,
		     (size_t)size);
	if (rc)
		return rc;
	return (int)size;
}
