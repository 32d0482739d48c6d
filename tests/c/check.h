/*
 * What the C test programs share: expectations that count a failure and go
 * on (EXPECT, EXPECT_RC; main returns `failures ? 1 : 0`), and checks that
 * stop the program at the first error (CHECK, die). Include it after the
 * rdma headers the program uses.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_CHECK_H
#define OXI_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <rdma/fi_errno.h>

/* How many expectations ran and how many of them failed. */
static int failures __attribute__((unused)), checks __attribute__((unused));

/* Counts a failed condition and prints where and why; the test goes on. */
#define EXPECT(cond, ...)                                               \
	do {                                                            \
		checks++;                                               \
		if (!(cond)) {                                          \
			failures++;                                     \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);     \
			printf(__VA_ARGS__);                            \
			printf("\n");                                   \
		}                                                       \
	} while (0)

/* EXPECT for a return code, printing what came back and its meaning. */
#define EXPECT_RC(expr, want)                                                    \
	do {                                                                     \
		long rc_ = (long) (expr);                                        \
		EXPECT(rc_ == (want), "%s returned %ld (%s), want %ld", #expr, rc_, \
		       fi_strerror((int) -rc_), (long) (want));                  \
	} while (0)

/* Stops the program: `what` failed with libfabric code `rc`. */
static inline void die(const char *what, long rc)
{
	printf("FAIL %s: %ld (%s)\n", what, rc, fi_strerror((int) -rc));
	fflush(stdout);
	exit(1);
}

/* Stops the program unless `expr` returns 0. */
#define CHECK(expr)                           \
	do {                                  \
		long rc_ = (long) (expr);     \
		if (rc_)                      \
			die(#expr, rc_);      \
	} while (0)

#endif
