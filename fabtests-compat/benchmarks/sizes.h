/*
 * Message-size lists as the benchmark programs take them (-S 1,64,8k,1m):
 * one parser for fabtests-compat/benchmarks, fabtests-compat/mpi/mpi_bench
 * and bench/tcp_pingpong, which build separately (against Debian's
 * libfabric, with mpicc, and with no libfabric at all).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_BENCH_SIZES_H
#define OXI_BENCH_SIZES_H

#include <stdlib.h>
#include <string.h>

/* Parses "4096", "8k", "1m" or "2g" into *out; -1 for anything else. */
static inline int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -1;
	*out = (size_t) v;
	return 0;
}

/* Parses a comma list into out[0..max); returns how many, or -1 when an
 * entry is not a size. */
static inline int parse_size_list(const char *list, size_t *out, int max)
{
	char *dup = strdup(list), *save = NULL;
	int n = 0;
	if (!dup)
		return -1;
	for (char *t = strtok_r(dup, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
		if (parse_size(t, &out[n]) != 0) {
			free(dup);
			return -1;
		}
		n++;
	}
	free(dup);
	return n;
}

#endif
