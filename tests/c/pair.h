/*
 * What the two-endpoint test programs (coalesce.c, splitframes.c) share:
 * two RDM endpoints of one domain, each with its own CQ and AV, and a
 * bounded read of one CQ. The program defines `info` and `domain` before
 * including this, after check.h and the rdma headers.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_PAIR_H
#define OXI_TESTS_PAIR_H

#include <stdio.h>
#include <time.h>

struct side {
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	char addr[64];
};

/* Opens an enabled endpoint with a tagged-format CQ of `cq_size` entries
 * (0: the provider's default) for both directions. */
static void open_side(struct side *s, size_t cq_size)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = cq_size };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(s->addr);
	CHECK(fi_cq_open(domain, &ca, &s->cq, NULL));
	CHECK(fi_av_open(domain, &aa, &s->av, NULL));
	CHECK(fi_endpoint(domain, info, &s->ep, NULL));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
	CHECK(fi_getname(&s->ep->fid, s->addr, &len));
}

/* Opens both endpoints and makes each the other's peer. */
static void open_pair(struct side *a, struct side *b, size_t cq_size)
{
	open_side(a, cq_size);
	open_side(b, cq_size);
	CHECK(fi_av_insert(a->av, b->addr, 1, &a->peer, 0, NULL) != 1);
	CHECK(fi_av_insert(b->av, a->addr, 1, &b->peer, 0, NULL) != 1);
}

static void close_pair(struct side *a, struct side *b)
{
	struct side *s[2] = { a, b };
	for (int i = 0; i < 2; i++)
		fi_close(&s[i]->ep->fid);
	for (int i = 0; i < 2; i++) {
		fi_close(&s[i]->av->fid);
		fi_close(&s[i]->cq->fid);
	}
}

/* Reads `want` completions from one CQ only, for at most 10 s; an error
 * completion fails. */
static int reap(struct fid_cq *cq, int want, const char *what)
{
	struct fi_cq_tagged_entry e[16];
	time_t end = time(NULL) + 10;
	while (want > 0 && time(NULL) < end) {
		ssize_t n = fi_cq_read(cq, e, 16);
		if (n > 0) {
			want -= (int) n;
		} else if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			(void) fi_cq_readerr(cq, &err, 0);
			printf("FAIL %s: error completion %d (%s)\n", what, err.err, fi_strerror(err.err));
			return -1;
		} else if (n != -FI_EAGAIN) {
			printf("FAIL %s: fi_cq_read %zd (%s)\n", what, n, fi_strerror((int) -n));
			return -1;
		}
	}
	if (want > 0)
		printf("FAIL %s: %d completions missing after 10 s\n", what, want);
	return want > 0 ? -1 : 0;
}

#endif
