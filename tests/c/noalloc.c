/*
 * The fast path allocates nothing, and a large message is never staged in
 * a buffer of its own size: two RDM endpoints in one process
 * (manual progress, so every byte moves inside these calls) exchange
 * small tagged and untagged messages, and after a warm-up the malloc,
 * calloc and realloc calls made during 2000 round trips (post receive,
 * send, read completions on both sides) are counted. The program defines
 * the allocator entry points itself, so every allocation in the process,
 * the library's included, goes through the counters.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static volatile int counting;
static volatile long allocs;
static volatile size_t largest;

static void count(size_t n)
{
	if (!counting)
		return;
	allocs++;
	if (n > largest)
		largest = n;
}

void *malloc(size_t n)
{
	count(n);
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	count(a * b);
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	count(n);
	return __libc_realloc(p, n);
}
void free(void *p)
{
	__libc_free(p);
}

struct side {
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	struct sockaddr_in addr;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

static int open_side(struct side *s)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(s->addr);
	return fi_cq_open(domain, &ca, &s->cq, NULL) || fi_av_open(domain, &aa, &s->av, NULL) ||
	       fi_endpoint(domain, info, &s->ep, NULL) || fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	       fi_ep_bind(s->ep, &s->av->fid, 0) || fi_enable(s->ep) || fi_getname(&s->ep->fid, &s->addr, &len);
}

/* Reads `want` completions from `s`, driving `o` too; bounded. */
static int reap(struct side *s, struct side *o, int want)
{
	struct fi_cq_tagged_entry e[4];
	time_t end = time(NULL) + 10;
	while (want > 0 && time(NULL) < end) {
		ssize_t n = fi_cq_read(s->cq, e, 4);
		if (n > 0)
			want -= (int) n;
		else if (n != -FI_EAGAIN)
			return -1;
		(void) fi_cq_read(o->cq, NULL, 0);
	}
	return want == 0 ? 0 : -1;
}

/* One round trip a -> b -> a; tagged or not. */
static int round_trip(struct side *a, struct side *b, char *buf, int tagged)
{
	char rbuf[64];
	int rc;
	if (tagged)
		rc = fi_trecv(b->ep, rbuf, sizeof(rbuf), NULL, b->peer, 7, 0, NULL) ||
		     fi_tsend(a->ep, buf, 32, NULL, a->peer, 7, NULL) || reap(a, b, 1) || reap(b, a, 1) ||
		     fi_trecv(a->ep, rbuf, sizeof(rbuf), NULL, a->peer, 8, 0, NULL) ||
		     fi_tsend(b->ep, buf, 32, NULL, b->peer, 8, NULL) || reap(b, a, 1) || reap(a, b, 1);
	else
		rc = fi_recv(b->ep, rbuf, sizeof(rbuf), NULL, b->peer, NULL) ||
		     fi_send(a->ep, buf, 32, NULL, a->peer, NULL) || reap(a, b, 1) || reap(b, a, 1) ||
		     fi_recv(a->ep, rbuf, sizeof(rbuf), NULL, a->peer, NULL) ||
		     fi_send(b->ep, buf, 32, NULL, b->peer, NULL) || reap(b, a, 1) || reap(a, b, 1);
	return rc;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct side a, b;
	char buf[64] = "thirty-two bytes of payload.....";
	long got[2];

	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info) ||
	    fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL)) {
		printf("FAIL: setup\n");
		return 1;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (open_side(&a) || open_side(&b) || fi_av_insert(a.av, &b.addr, 1, &a.peer, 0, NULL) != 1 ||
	    fi_av_insert(b.av, &a.addr, 1, &b.peer, 0, NULL) != 1) {
		printf("FAIL: endpoints\n");
		return 1;
	}
	for (int tagged = 0; tagged < 2; tagged++) {
		/* Warm-up: connections, queues reach their steady size. */
		for (int i = 0; i < 200; i++)
			if (round_trip(&a, &b, buf, tagged)) {
				printf("FAIL: warm-up round trip %d (tagged %d)\n", i, tagged);
				return 1;
			}
		allocs = 0;
		counting = 1;
		for (int i = 0; i < 2000; i++)
			if (round_trip(&a, &b, buf, tagged)) {
				counting = 0;
				printf("FAIL: round trip %d (tagged %d)\n", i, tagged);
				return 1;
			}
		counting = 0;
		got[tagged] = allocs;
	}
	printf("allocations in 2000 round trips: untagged %ld, tagged %ld\n", got[0], got[1]);

	/* A 16 MiB message sent before its receive is posted: it must wait
	 * with its sender (rendezvous), not in a 16 MiB buffer here. */
	size_t big = 16u << 20;
	char *tx = malloc(big), *rx = malloc(big);
	memset(tx, 0x5a, big);
	memset(rx, 0, big);
	largest = 0;
	counting = 1;
	int big_rc = fi_tsend(b.ep, tx, big, NULL, b.peer, 99, NULL);
	/* Let the announcement arrive and sit unexpected. */
	for (int i = 0; i < 1000 && !big_rc; i++) {
		(void) fi_cq_read(a.cq, NULL, 0);
		(void) fi_cq_read(b.cq, NULL, 0);
	}
	big_rc = big_rc || fi_trecv(a.ep, rx, big, NULL, a.peer, 99, 0, NULL) || reap(&a, &b, 1) || reap(&b, &a, 1);
	counting = 0;
	printf("16 MiB unexpected message: rc %d, largest allocation %zu bytes\n", big_rc, largest);
	if (big_rc || memcmp(tx, rx, big)) {
		printf("FAIL: the large message did not arrive intact\n");
		return 1;
	}
	if (largest >= (1u << 20)) {
		printf("FAIL: a large unexpected message was staged in a buffer of %zu bytes\n", largest);
		return 1;
	}
	free(tx);
	free(rx);
	fi_close(&a.ep->fid);
	fi_close(&b.ep->fid);
	fi_close(&a.av->fid);
	fi_close(&b.av->fid);
	fi_close(&a.cq->fid);
	fi_close(&b.cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	if (got[0] || got[1]) {
		printf("FAIL: the send/receive/completion path allocated\n");
		return 1;
	}
	printf("PASS\n");
	return 0;
}
