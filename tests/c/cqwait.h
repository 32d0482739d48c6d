/*
 * Waiting for one completion, bounded (about 10 s), for the C tests that
 * read their CQs themselves. Include it after the rdma headers.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_CQWAIT_H
#define OXI_TESTS_CQWAIT_H

#include <string.h>
#include <time.h>
#include <rdma/fi_eq.h>

/* Waits for one completion on `cq`: 1 with *e filled, or the negative
 * error (the error entry's err, its op_context in *e) / 0 on timeout. */
static inline int cq_wait_one(struct fid_cq *cq, struct fi_cq_msg_entry *e)
{
	for (int i = 0; i < 2000; i++) {
		ssize_t n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(cq, &err, 0);
			e->op_context = err.op_context;
			return -err.err;
		}
		if (n != -FI_EAGAIN)
			return (int) n;
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

#endif
