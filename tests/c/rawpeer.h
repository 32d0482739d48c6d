/*
 * Helpers for tests that play a raw TCP peer of the sockets provider
 * (badframes.c, badrma.c): little-endian field writes, driving the
 * endpoint's manual progress through its CQ, and noticing that the
 * endpoint closed the raw connection. The test defines nothing else: the
 * CQ it drives is `cq` here.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TEST_RAWPEER_H
#define OXI_TEST_RAWPEER_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

static struct fid_cq *cq;

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/* Drives the endpoint for a while (manual progress) by reading the CQ. */
static void drive(int ms)
{
	struct fi_cq_data_entry e;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		(void) fi_cq_read(cq, &e, 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/* True when the endpoint closed the raw connection (read gives EOF). */
static int closed_by_peer(int s)
{
	char c;
	for (int i = 0; i < 50; i++) {
		drive(20);
		ssize_t n = recv(s, &c, 1, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 1;
	}
	return 0;
}

#endif
