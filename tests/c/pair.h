/*
 * What the two-endpoint test programs (coalesce.c, splitframes.c) share:
 * two RDM endpoints of one domain of the provider under test, each with
 * its own CQ and AV, and a bounded read of one CQ. Include it after
 * check.h and the rdma headers (fi_cm.h among them).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#ifndef OXI_TESTS_PAIR_H
#define OXI_TESTS_PAIR_H

#include <stdio.h>
#include <string.h>
#include <time.h>

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

struct side {
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	char addr[64];
};

/* The CQs' wait object (a program that blocks in fi_cq_sread sets
 * FI_WAIT_UNSPEC before open_pair). */
static enum fi_wait_obj pair_cq_wait = FI_WAIT_NONE;
/* The domain's threading (a program with two threads in one domain sets
 * FI_THREAD_SAFE before open_pair). */
static enum fi_threading pair_threading = FI_THREAD_UNSPEC;

/* Called, when set, right after each side's CQ is opened and before
 * anything is bound to it (a program that takes the CQ's wait descriptor
 * first, as event-driven runtimes do). */
static void (*pair_cq_opened)(struct side *s);

/* Opens an enabled endpoint with a tagged-format CQ of `cq_size` entries
 * (0: the provider's default) for both directions. */
static void open_side(struct side *s, size_t cq_size)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = cq_size, .wait_obj = pair_cq_wait };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(s->addr);
	CHECK(fi_cq_open(domain, &ca, &s->cq, NULL));
	if (pair_cq_opened)
		pair_cq_opened(s);
	CHECK(fi_av_open(domain, &aa, &s->av, NULL));
	CHECK(fi_endpoint(domain, info, &s->ep, NULL));
	CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
	CHECK(fi_enable(s->ep));
	CHECK(fi_getname(&s->ep->fid, s->addr, &len));
}

/* Opens a fabric and domain of RDM endpoints of `prov` on loopback with
 * `caps`, `progress` and `mr_mode` (the hints' domain attributes), both
 * endpoints in it, and makes each the other's peer. */
static void open_pair(struct side *a, struct side *b, const char *prov, uint64_t caps,
		      enum fi_progress progress, int mr_mode, size_t cq_size)
{
	struct fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->domain_attr->data_progress = progress;
	hints->domain_attr->mr_mode = mr_mode;
	hints->domain_attr->threading = pair_threading;
	hints->mode = ~0ULL;
	/* shm names endpoints itself (a service would give both one name). */
	int named = strcmp(prov, "shm") != 0;
	CHECK(fi_getinfo(FI_VERSION(1, 17), named ? "127.0.0.1" : NULL, named ? "0" : NULL,
			 named ? FI_SOURCE : 0, hints, &info));
	fi_freeinfo(hints);
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
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
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

/* Milliseconds on the monotonic clock. */
static double __attribute__((unused)) now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

/* Reads `want` completions from one CQ only, for at most 10 s; an error
 * completion fails. */
static int __attribute__((unused)) reap(struct fid_cq *cq, int want, const char *what)
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
