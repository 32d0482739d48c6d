/*
 * What the multi-process RDM test programs (killpeer.c, conntimeout.c)
 * share: a monotonic clock, inserting a loopback peer by port, and a
 * bounded wait for one completion. Include it after check.h; the program
 * defines `cq` and `av` before including it.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_PEERS_H
#define OXI_TESTS_PEERS_H

#include <netinet/in.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Inserts 127.0.0.1:PORT into `av`. */
static fi_addr_t insert(const char *port)
{
	struct sockaddr_in sin;
	fi_addr_t a;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t) atoi(port));
	sin.sin_addr.s_addr = htonl(0x7f000001);
	if (fi_av_insert(av, &sin, 1, &a, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
	return a;
}

/* Waits up to `seconds` for one completion on `cq`: 0, the error number
 * (the entry copied to *err_out when given), or -1 when none came. */
static int wait_comp(double seconds, struct fi_cq_err_entry *err_out)
{
	struct fi_cq_data_entry e;
	double end = now() + seconds;
	while (now() < end) {
		ssize_t n = fi_cq_sread(cq, &e, 1, NULL, 100);
		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			if (err_out)
				*err_out = err;
			return err.err ? err.err : FI_EOTHER;
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_sread", n);
	}
	return -1;
}

#endif
