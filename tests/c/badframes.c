/*
 * A hostile or broken peer on the wire: raw TCP connections to an RDM
 * endpoint's listener send malformed frames (wrong version, unknown
 * operation, reserved bits, oversized control frames, truncated headers).
 * Each such connection is closed by the endpoint; the endpoint keeps
 * working: a well-formed peer speaking the protocol by hand delivers a
 * message that is too long for the posted buffer, which completes with
 * FI_ETRUNC and leaves the bytes after the buffer untouched, then a
 * message that fits.
 *
 * The frame layout written here is the one documented in
 * providers/sockets/src/wire.rs.
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
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "check.h"
#include "rawpeer.h"

static struct fid_ep *ep;
static struct sockaddr_in me;

static void header(uint8_t h[40], uint8_t version, uint8_t op, uint16_t flags, uint64_t len)
{
	memset(h, 0, 40);
	h[0] = version;
	h[1] = op;
	h[2] = (uint8_t) flags;
	h[3] = (uint8_t) (flags >> 8);
	put64(h + 8, len);
}

static int raw_connect(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *) &me, sizeof(me)))
		return -1;
	return s;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(me);
	uint8_t h[40];

	hints->fabric_attr->prov_name = strdup("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info) ||
	    fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL) ||
	    fi_cq_open(domain, &ca, &cq, NULL) || fi_av_open(domain, &aa, &av, NULL) ||
	    fi_endpoint(domain, info, &ep, NULL) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(ep, &av->fid, 0) || fi_enable(ep) || fi_getname(&ep->fid, &me, &len)) {
		printf("FAIL: setup\n");
		return 1;
	}

	/* Malformed frames: each connection must be closed by the endpoint. */
	struct {
		const char *what;
		uint8_t version, op;
		uint16_t flags;
		uint64_t len;
		int reserved;
	} bad[] = {
		{ "wrong version", 9, 2, 0, 4, 0 },
		{ "unknown operation", 1, 200, 0, 4, 0 },
		{ "unknown flag bits", 1, 2, 0x8000, 4, 0 },
		{ "reserved bytes set", 1, 2, 0, 4, 1 },
		{ "oversized control frame", 1, 1, 0, 1 << 20, 0 },
		{ "acknowledgement with a payload", 1, 3, 0, 8, 0 },
		{ "clear-to-send for no announced message", 1, 11, 0, 0, 0 },
		{ "clear-to-send with a payload", 1, 11, 0, 8, 0 },
		{ "data for no cleared message", 1, 12, 0, 4, 0 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int s = raw_connect();
		EXPECT(s >= 0, "connect");
		header(h, bad[i].version, bad[i].op, bad[i].flags, bad[i].len);
		if (bad[i].reserved)
			h[5] = 1;
		EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40, "send header");
		EXPECT(closed_by_peer(s), "%s: connection not closed", bad[i].what);
		close(s);
	}
	/* A truncated header followed by EOF. */
	{
		int s = raw_connect();
		EXPECT(send(s, "\x01\x02\x00", 3, MSG_NOSIGNAL) == 3, "send");
		close(s);
		drive(50);
	}

	/* A well-formed peer: Hello, wait for HelloAck, then messages. */
	int s = raw_connect();
	struct sockaddr_in fake = me;
	fake.sin_port = htons(9); /* a listening address it claims */
	header(h, 1, 1, 0, sizeof(fake));
	EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40 && send(s, &fake, sizeof(fake), MSG_NOSIGNAL) == sizeof(fake),
	       "hello");
	drive(50);
	uint8_t ack[40];
	EXPECT(recv(s, ack, 40, MSG_WAITALL) == 40 && ack[0] == 1 && ack[1] == 8, "HelloAck");

	/* Posted buffer of 16 bytes inside a guarded area. */
	uint8_t area[64];
	memset(area, 0xAA, sizeof(area));
	uint8_t *buf = area + 16;
	EXPECT(fi_recv(ep, buf, 16, NULL, FI_ADDR_UNSPEC, (void *) 1) == 0, "fi_recv");
	uint8_t big[100];
	memset(big, 0x55, sizeof(big));
	header(h, 1, 2, 0, sizeof(big));
	EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40 && send(s, big, sizeof(big), MSG_NOSIGNAL) == sizeof(big),
	       "oversized message");
	struct fi_cq_data_entry e;
	ssize_t n = -FI_EAGAIN;
	for (int i = 0; i < 200 && n == -FI_EAGAIN; i++) {
		drive(5);
		n = fi_cq_read(cq, &e, 1);
	}
	EXPECT(n == -FI_EAVAIL, "truncated message gives an error entry (%zd)", n);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err;
		memset(&err, 0, sizeof(err));
		fi_cq_readerr(cq, &err, 0);
		EXPECT(err.err == FI_ETRUNC && err.olen == sizeof(big) - 16 && err.len == 16,
		       "FI_ETRUNC with olen (err %d olen %zu len %zu)", err.err, err.olen, err.len);
	}
	for (int i = 0; i < 16; i++)
		EXPECT(area[i] == 0xAA && area[32 + i] == 0xAA, "memory outside the buffer changed at %d", i);
	for (int i = 0; i < 16; i++)
		EXPECT(buf[i] == 0x55, "payload byte %d", i);

	/* And the connection still works for a message that fits. */
	char small[8] = { 0 };
	EXPECT(fi_recv(ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, (void *) 2) == 0, "fi_recv");
	header(h, 1, 2, 0, 5);
	EXPECT(send(s, h, 40, MSG_NOSIGNAL) == 40 && send(s, "hello", 5, MSG_NOSIGNAL) == 5, "message");
	n = -FI_EAGAIN;
	for (int i = 0; i < 200 && n == -FI_EAGAIN; i++) {
		drive(5);
		n = fi_cq_read(cq, &e, 1);
	}
	EXPECT(n == 1 && e.len == 5 && !strcmp(small, "hello"), "message after the bad frames (%zd)", n);
	close(s);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("badframes: %d failures\n", failures);
	return failures ? 1 : 0;
}
