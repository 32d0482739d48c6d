/*
 * A hostile or broken peer sending RMA frames (providers/sockets/src/wire.rs:
 * Write = 16, ReadReq = 17, RmaResp = 18, Atomic = 19) to an RDM endpoint of the sockets
 * provider over a raw TCP connection. The endpoint has a 64-byte region
 * (key 0x77, remote read and write) and an 8-byte read-only region (key
 * 0x78), each inside guard bytes. Checked:
 *
 *  - a write or read with an unknown key, a range past the region's end, a
 *    wrapped address (2^64 - 4 + 8 bytes), or a write into the read-only
 *    region is answered with an RmaResp carrying FI_EACCES and the cause
 *    (key 1, range 2, access 3), its bytes are consumed, and no memory is
 *    touched; the connection stays usable;
 *  - a good write lands exactly in its range, a good read returns the
 *    region's bytes;
 *  - atomics (Atomic, tag: op | datatype << 8 | kind << 16 | count
 *    << 32): an FI_SUM of a uint64 lands, a fetching FI_SUM answers the
 *    old value, one with an unknown key or past the region's end is
 *    refused (FI_EACCES) and touches nothing, one whose length does not
 *    match its tag or that is larger than the provider's limit closes the
 *    connection;
 *  - an RmaResp nobody asked for, and a Write shorter than its target
 *    prefix, close the connection; a Write whose payload is cut short by
 *    EOF writes nothing outside the region;
 *  - afterwards the endpoint still accepts a new peer and answers it.
 *
 * Memory registration uses mr_mode 0: 0-based offsets and requested keys.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_atomic.h>
#include "check.h"
#include "rawpeer.h"

static struct sockaddr_in me;

/* The frame kinds of the wire this test speaks (wire.rs `Op`). */
enum { OP_HELLO_ACK = 8, OP_WRITE = 16, OP_READ_REQ = 17, OP_RMA_RESP = 18, OP_ATOMIC = 19 };

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A frame header: op, payload length, tag, data, message id. */
static void header(uint8_t h[40], uint8_t op, uint64_t len, uint64_t tag, uint64_t data, uint64_t id)
{
	memset(h, 0, 40);
	h[0] = 1;
	h[1] = op;
	put64(h + 8, len);
	put64(h + 16, tag);
	put64(h + 24, data);
	put64(h + 32, id);
}

/* Receives exactly n bytes while driving the endpoint; 0 on success. */
static int recv_all(int s, void *buf, size_t n)
{
	size_t got = 0;
	for (int i = 0; i < 400 && got < n; i++) {
		drive(5);
		ssize_t r = recv(s, (char *) buf + got, n - got, MSG_DONTWAIT);
		if (r > 0)
			got += (size_t) r;
		else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return -1;
	}
	return got == n ? 0 : -1;
}

/* A raw peer that has done the Hello handshake. */
static int raw_peer(uint16_t claimed_port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in fake = me;
	uint8_t h[40], ack[40];
	if (s < 0 || connect(s, (struct sockaddr *) &me, sizeof(me)))
		return -1;
	fake.sin_port = htons(claimed_port);
	header(h, 1, sizeof(fake), 0, 0, 0);
	if (send(s, h, 40, MSG_NOSIGNAL) != 40 || send(s, &fake, sizeof(fake), MSG_NOSIGNAL) != sizeof(fake))
		return -1;
	if (recv_all(s, ack, 40) || ack[1] != OP_HELLO_ACK)
		return -1;
	return s;
}

/* Sends a Write of `n` bytes of `fill` to (addr, key); returns the answer's
 * status and cause through the pointers, -1 when no answer came. */
static int rma_write(int s, uint64_t id, uint64_t addr, uint64_t key, size_t n, uint8_t fill, uint64_t *status,
		     uint64_t *cause)
{
	uint8_t h[40], pre[16], data[256], r[40];
	header(h, OP_WRITE, 16 + n, 0, 0, id);
	put64(pre, addr);
	put64(pre + 8, key);
	memset(data, fill, sizeof(data));
	if (send(s, h, 40, MSG_NOSIGNAL) != 40 || send(s, pre, 16, MSG_NOSIGNAL) != 16 ||
	    (n && send(s, data, n, MSG_NOSIGNAL) != (ssize_t) n))
		return -1;
	if (recv_all(s, r, 40) || r[1] != OP_RMA_RESP || get64(r + 32) != id || get64(r + 8) != 0)
		return -1;
	*status = get64(r + 24);
	*cause = get64(r + 16);
	return 0;
}

/* Sends an Atomic on one uint64 (kind 0 base, 1 fetch) with operand v;
 * the answer's header in r and, for a fetch, the old value in *old. */
static int rma_atomic(int s, uint64_t id, uint64_t addr, uint64_t key, int op, int kind, uint64_t v, uint8_t r[40],
		      uint64_t *old)
{
	uint8_t h[40], p[24], back[8];
	header(h, OP_ATOMIC, 24, (uint64_t) op | (uint64_t) FI_UINT64 << 8 | (uint64_t) kind << 16 | 1ULL << 32, 0, id);
	put64(p, addr);
	put64(p + 8, key);
	put64(p + 16, v);
	if (send(s, h, 40, MSG_NOSIGNAL) != 40 || send(s, p, 24, MSG_NOSIGNAL) != 24)
		return -1;
	if (recv_all(s, r, 40) || r[1] != OP_RMA_RESP || get64(r + 32) != id)
		return -1;
	if (get64(r + 8) == 8) {
		if (recv_all(s, back, 8))
			return -1;
		*old = get64(back);
	}
	return 0;
}

/* Sends a ReadReq of n bytes; the answer's header in r, its payload in out. */
static int rma_read(int s, uint64_t id, uint64_t addr, uint64_t key, size_t n, uint8_t r[40], uint8_t *out)
{
	uint8_t h[40], pre[16];
	header(h, OP_READ_REQ, 16, n, 0, id);
	put64(pre, addr);
	put64(pre + 8, key);
	if (send(s, h, 40, MSG_NOSIGNAL) != 40 || send(s, pre, 16, MSG_NOSIGNAL) != 16)
		return -1;
	if (recv_all(s, r, 40) || r[1] != OP_RMA_RESP || get64(r + 32) != id)
		return -1;
	if (get64(r + 8) && recv_all(s, out, get64(r + 8)))
		return -1;
	return 0;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr, *ro;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	static uint8_t area[256], rarea[64];
	uint8_t *region = area + 96, *rregion = rarea + 24;
	size_t len = sizeof(me);
	uint64_t st, cause;

	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = 0;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info) ||
	    fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL) ||
	    fi_cq_open(domain, &ca, &cq, NULL) || fi_av_open(domain, &aa, &av, NULL) ||
	    fi_endpoint(domain, info, &ep, NULL) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(ep, &av->fid, 0) || fi_enable(ep) || fi_getname(&ep->fid, &me, &len)) {
		printf("FAIL: setup\n");
		return 1;
	}
	EXPECT(info->domain_attr->mr_mode == 0, "mr_mode %#x, want 0", info->domain_attr->mr_mode);
	memset(area, 0xAA, sizeof(area));
	memset(rarea, 0xBB, sizeof(rarea));
	memset(region, 0, 64);
	memset(rregion, 0x11, 8);
	if (fi_mr_reg(domain, region, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x77, 0, &mr, NULL) ||
	    fi_mr_reg(domain, rregion, 8, FI_REMOTE_READ, 0, 0x78, 0, &ro, NULL)) {
		printf("FAIL: fi_mr_reg\n");
		return 1;
	}

	int s = raw_peer(9);
	EXPECT(s >= 0, "raw peer handshake");
	struct {
		const char *what;
		uint64_t addr, key;
		size_t n;
		uint64_t cause;
	} refused[] = {
		{ "unknown key", 0, 0x99, 8, 1 },
		{ "range past the end", 60, 0x77, 8, 2 },
		{ "wrapped address", UINT64_MAX - 3, 0x77, 8, 2 },
		{ "read-only region", 0, 0x78, 4, 3 },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		int rc = rma_write(s, 100 + i, refused[i].addr, refused[i].key, refused[i].n, 0x55, &st, &cause);
		EXPECT(rc == 0, "write (%s): no answer", refused[i].what);
		EXPECT(st == FI_EACCES && cause == refused[i].cause, "write (%s): status %llu cause %llu",
		       refused[i].what, (unsigned long long) st, (unsigned long long) cause);
		uint8_t r[40], out[64];
		if (refused[i].key != 0x78) {
			rc = rma_read(s, 200 + i, refused[i].addr, refused[i].key, refused[i].n, r, out);
			EXPECT(rc == 0 && get64(r + 24) == FI_EACCES && get64(r + 8) == 0 &&
				       get64(r + 16) == refused[i].cause,
			       "read (%s): refused without payload", refused[i].what);
		}
	}
	for (int i = 0; i < 96; i++)
		EXPECT(area[i] == 0xAA && area[160 + i] == 0xAA, "guard byte %d changed", i);
	for (int i = 0; i < 64; i++)
		EXPECT(region[i] == 0, "region byte %d changed by a refused write", i);
	for (int i = 0; i < 8; i++)
		EXPECT(rregion[i] == 0x11, "read-only byte %d changed", i);

	/* Good write and read on the same connection. */
	EXPECT(rma_write(s, 300, 8, 0x77, 8, 0x5c, &st, &cause) == 0 && st == 0, "good write");
	for (int i = 0; i < 64; i++)
		EXPECT(region[i] == ((i >= 8 && i < 16) ? 0x5c : 0), "region byte %d after the good write", i);
	{
		uint8_t r[40], out[64];
		memset(region + 32, 0x3e, 4);
		EXPECT(rma_read(s, 301, 30, 0x77, 8, r, out) == 0 && get64(r + 24) == 0 && get64(r + 8) == 8, "good read");
		EXPECT(!memcmp(out, region + 30, 8), "read returned other bytes");
		EXPECT(rma_read(s, 302, 0, 0x78, 8, r, out) == 0 && get64(r + 24) == 0 && out[0] == 0x11,
		       "read of the read-only region");
	}
	{
		struct fi_cq_data_entry e;
		EXPECT(fi_cq_read(cq, &e, 1) == -FI_EAGAIN, "an RMA without remote CQ data completed on the CQ");
	}

	/* Atomics: a sum lands, a fetching sum returns the old value, bad
	 * keys and ranges are refused and touch nothing. */
	{
		uint8_t r[40];
		uint64_t old = 0, cur;
		memset(region + 48, 0, 16);
		EXPECT(rma_atomic(s, 500, 48, 0x77, FI_SUM, 0, 5, r, &old) == 0 && get64(r + 24) == 0 &&
			       get64(r + 8) == 0,
		       "atomic sum");
		EXPECT(rma_atomic(s, 501, 48, 0x77, FI_SUM, 1, 7, r, &old) == 0 && get64(r + 24) == 0 &&
			       get64(r + 8) == 8 && old == 5,
		       "fetching atomic sum (old %llu)", (unsigned long long) old);
		memcpy(&cur, region + 48, 8);
		EXPECT(cur == 12, "atomic target %llu, want 12", (unsigned long long) cur);
		EXPECT(rma_atomic(s, 502, 48, 0x99, FI_SUM, 0, 1, r, &old) == 0 && get64(r + 24) == FI_EACCES &&
			       get64(r + 16) == 1,
		       "atomic with an unknown key refused");
		EXPECT(rma_atomic(s, 503, 60, 0x77, FI_SUM, 0, 1, r, &old) == 0 && get64(r + 24) == FI_EACCES &&
			       get64(r + 16) == 2,
		       "atomic past the end refused");
		EXPECT(rma_atomic(s, 504, 0, 0x78, FI_SUM, 0, 1, r, &old) == 0 && get64(r + 24) == FI_EACCES &&
			       get64(r + 16) == 3,
		       "atomic on the read-only region refused");
		memcpy(&cur, region + 48, 8);
		EXPECT(cur == 12 && rregion[0] == 0x11, "a refused atomic changed memory");
	}

	/* An answer nobody asked for closes the connection. */
	{
		uint8_t h[40];
		header(h, OP_RMA_RESP, 0, 0, 0, 12345);
		EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40, "send");
		EXPECT(closed_by_peer(s), "unsolicited RmaResp: connection not closed");
		close(s);
	}
	/* A Write shorter than its prefix closes the connection. */
	s = raw_peer(10);
	EXPECT(s >= 0, "second raw peer");
	{
		uint8_t h[40];
		header(h, OP_WRITE, 8, 0, 0, 1);
		EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40, "send");
		EXPECT(closed_by_peer(s), "short Write: connection not closed");
		close(s);
	}
	/* An Atomic whose length does not match its tag, and one larger than
	 * the provider's limit, close the connection. */
	for (int k = 0; k < 2; k++) {
		uint8_t h[40];
		s = raw_peer((uint16_t) (20 + k));
		EXPECT(s >= 0, "raw peer for a bad atomic");
		header(h, OP_ATOMIC, k ? 16 + (1 << 20) : 16 + 9,
		       (uint64_t) FI_SUM | (uint64_t) FI_UINT64 << 8 | (k ? (uint64_t) (1 << 17) : 1ULL) << 32, 0, 1);
		EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40, "send");
		EXPECT(closed_by_peer(s), "bad atomic %d: connection not closed", k);
		close(s);
	}
	/* A Write cut short by EOF touches nothing outside the region. */
	s = raw_peer(11);
	EXPECT(s >= 0, "third raw peer");
	{
		uint8_t h[40], pre[16], data[10];
		header(h, OP_WRITE, 16 + 64, 0, 0, 1);
		put64(pre, 0);
		put64(pre + 8, 0x77);
		memset(data, 0x66, sizeof(data));
		EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40 && send(s, pre, 16, MSG_NOSIGNAL) == 16 &&
			       send(s, data, sizeof(data), MSG_NOSIGNAL) == sizeof(data),
		       "send");
		close(s);
		drive(100);
	}
	for (int i = 0; i < 96; i++)
		EXPECT(area[i] == 0xAA && area[160 + i] == 0xAA, "guard byte %d changed", i);

	/* The endpoint still serves a new peer. */
	s = raw_peer(12);
	EXPECT(s >= 0, "fourth raw peer");
	EXPECT(rma_write(s, 400, 0, 0x77, 4, 0x42, &st, &cause) == 0 && st == 0 && region[0] == 0x42,
	       "write after the bad frames");
	close(s);

	fi_close(&mr->fid);
	fi_close(&ro->fid);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("badrma: %d failures\n", failures);
	return failures ? 1 : 0;
}
