/*
 * The verbs guest checks' reporting: each step prints "ok STEP ..." or
 * "FAIL STEP: why", and the first failure ends the program (status 1).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_VERBS_CHECK_UTIL_H
#define OXI_VERBS_CHECK_UTIL_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <rdma/fi_errno.h>

static void die(const char *step, const char *fmt, ...)
{
	va_list ap;
	printf("FAIL %s: ", step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

#define CHECK(step, cond, ...) do { if (!(cond)) die(step, __VA_ARGS__); } while (0)
#define CALL(step, call) do { int rc_ = (int) (call); \
	if (rc_) die(step, "%s: %s (%d)", #call, fi_strerror(-rc_), rc_); } while (0)

#endif
