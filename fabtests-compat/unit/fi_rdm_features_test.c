/*
 * fi_rdm_features_test: two RDM endpoints in one process (manual progress)
 * exercising the receive-side features one by one: FI_MULTI_RECV with
 * FI_OPT_MIN_MULTI_RECV (messages packed into one buffer, the last
 * completion flagged FI_MULTI_RECV), remote CQ data, fi_inject (no send
 * completion), FI_SOURCE through fi_cq_readfrom, tagged FI_PEEK (match and
 * -FI_ENOMSG), and truncation reported as FI_ETRUNC with olen.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"
#include <netinet/in.h>

struct side {
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	fi_addr_t peer;
	struct sockaddr_in addr;
};

static struct fi_info *rinfo;

static int open_side(struct side *s, size_t cq_size)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = cq_size };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	size_t len = sizeof(s->addr);
	return fi_cq_open(ft_domain, &ca, &s->cq, NULL) || fi_av_open(ft_domain, &aa, &s->av, NULL) ||
	       fi_endpoint(ft_domain, rinfo, &s->ep, NULL) || fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	       fi_ep_bind(s->ep, &s->av->fid, 0) || fi_enable(s->ep) || fi_getname(&s->ep->fid, &s->addr, &len);
}

/* Reads one completion from `s`, driving both sides, bounded. Returns 1 for
 * a completion, -err for an error entry, 0 on timeout. */
static int next(struct side *s, struct side *other, struct fi_cq_tagged_entry *e, fi_addr_t *src,
		struct fi_cq_err_entry *err)
{
	double end = ft_now() + 10;
	while (ft_now() < end) {
		ssize_t n = fi_cq_readfrom(s->cq, e, 1, src);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(s->cq, err, 0);
			return -err->err;
		}
		(void) fi_cq_read(other->cq, NULL, 0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct side a, b;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	char big[4096], msg[1000];
	struct fi_info *hints;

	ft_parse(argc, argv);
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup(ft_prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_SOURCE;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &rinfo) ||
	    fi_fabric(rinfo->fabric_attr, &ft_fabric, NULL) || fi_domain(ft_fabric, rinfo, &ft_domain, NULL)) {
		printf("setup failed\n");
		return 1;
	}
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	FT_CHECK(!open_side(&a, 0) && !open_side(&b, 0), "endpoints");
	FT_RC(fi_av_insert(a.av, &b.addr, 1, &a.peer, 0, NULL), 1);
	FT_RC(fi_av_insert(b.av, &a.addr, 1, &b.peer, 0, NULL), 1);

	/* FI_MULTI_RECV: 4 KiB buffer, released once less than 1500 bytes remain. */
	size_t min = 1500;
	FT_RC(fi_setopt(&a.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)), 0);
	struct iovec iov = { big, sizeof(big) };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = big };
	FT_RC(fi_recvmsg(a.ep, &m, FI_MULTI_RECV), 0);
	memset(msg, 'x', sizeof(msg));
	for (int i = 0; i < 3; i++)
		FT_RC(fi_send(b.ep, msg, sizeof(msg), NULL, b.peer, NULL), 0);
	int released = 0;
	for (int i = 0; i < 3; i++) {
		FT_CHECK(next(&a, &b, &e, &src, &err) == 1, "multi-recv completion %d", i);
		FT_CHECK(e.len == sizeof(msg) && (char *) e.buf == big + i * sizeof(msg), "message %d placed at %p",
			 i, e.buf);
		released += (e.flags & FI_MULTI_RECV) != 0;
		FT_CHECK(src == a.peer, "FI_SOURCE names the sender");
	}
	FT_CHECK(released == 1, "exactly one completion releases the buffer (%d)", released);
	for (int i = 0; i < 3; i++)
		FT_CHECK(next(&b, &a, &e, &src, &err) == 1 && (e.flags & FI_SEND), "send completion %d", i);

	/* Remote CQ data. */
	FT_RC(fi_recv(a.ep, msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, msg), 0);
	FT_RC(fi_senddata(b.ep, "data", 5, NULL, 0xfeedULL, b.peer, NULL), 0);
	FT_CHECK(next(&a, &b, &e, &src, &err) == 1 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xfeed,
		 "remote CQ data");
	FT_CHECK(next(&b, &a, &e, &src, &err) == 1, "senddata completion");

	/* fi_inject: delivered, and no send completion. */
	FT_RC(fi_recv(a.ep, msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, msg), 0);
	char inj[8] = "inject";
	FT_RC(fi_inject(b.ep, inj, sizeof(inj), b.peer), 0);
	memset(inj, 0, sizeof(inj)); /* the buffer is free again at once */
	FT_CHECK(next(&a, &b, &e, &src, &err) == 1 && !strcmp(msg, "inject"), "injected message");
	FT_CHECK(fi_cq_read(b.cq, &e, 1) == -FI_EAGAIN, "no completion for fi_inject");

	/* Tagged FI_PEEK: a match reports the message without taking it;
	 * no match is -FI_ENOMSG in an error entry. */
	FT_RC(fi_tsend(b.ep, "tagged", 7, NULL, b.peer, 7, NULL), 0);
	FT_CHECK(next(&b, &a, &e, &src, &err) == 1, "tsend completion");
	struct fi_msg_tagged tm = { .addr = FI_ADDR_UNSPEC, .tag = 8, .context = &tm };
	int rc = 0;
	for (int i = 0; i < 50 && rc != -FI_ENOMSG; i++) {
		FT_RC(fi_trecvmsg(a.ep, &tm, FI_PEEK), 0);
		rc = next(&a, &b, &e, &src, &err);
	}
	FT_CHECK(rc == -FI_ENOMSG, "peek without match: %d", rc);
	tm.tag = 7;
	rc = 0;
	for (int i = 0; i < 200 && rc != 1; i++) {
		FT_RC(fi_trecvmsg(a.ep, &tm, FI_PEEK), 0);
		rc = next(&a, &b, &e, &src, &err);
	}
	FT_CHECK(rc == 1 && e.len == 7 && e.tag == 7, "peek finds the message (len %zu)", e.len);
	FT_RC(fi_trecv(a.ep, msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, 7, 0, msg), 0);
	FT_CHECK(next(&a, &b, &e, &src, &err) == 1 && !strcmp(msg, "tagged"), "peeked message still received");

	/* Truncation. */
	char small[4];
	FT_RC(fi_recv(a.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, small), 0);
	FT_RC(fi_send(b.ep, "0123456789", 10, NULL, b.peer, NULL), 0);
	rc = next(&a, &b, &e, &src, &err);
	FT_CHECK(rc == -FI_ETRUNC && err.olen == 6 && err.len == 4 && err.op_context == small,
		 "FI_ETRUNC (rc %d olen %zu len %zu ctx %p)", rc, err.olen, err.len, err.op_context);
	FT_CHECK(next(&b, &a, &e, &src, &err) == 1, "send completion");

	/* Large tagged messages that arrive before their receive (above the
	 * provider's eager size, whatever it is): FI_PEEK sees the whole
	 * length, FI_CLAIM then receives the data intact, FI_DISCARD drops
	 * one, and both sends complete. */
	{
		size_t big_len = 4u << 20;
		unsigned char *tx = malloc(big_len), *rx = malloc(big_len);
		for (size_t i = 0; i < big_len; i++)
			tx[i] = (unsigned char) (i * 31 + 7);
		FT_RC(fi_tsend(b.ep, tx, big_len, NULL, b.peer, 0x51, tx), 0);
		FT_RC(fi_tsend(b.ep, tx, big_len, NULL, b.peer, 0x52, rx), 0);
		struct fi_msg_tagged pm = { .addr = FI_ADDR_UNSPEC, .tag = 0x51, .context = &pm };
		rc = 0;
		for (int i = 0; i < 2000 && rc != 1; i++) {
			FT_RC(fi_trecvmsg(a.ep, &pm, FI_PEEK | FI_CLAIM), 0);
			rc = next(&a, &b, &e, &src, &err);
		}
		FT_CHECK(rc == 1 && e.len == big_len && e.tag == 0x51, "peek+claim of a large message (rc %d len %zu)",
			 rc, e.len);
		struct iovec biov = { rx, big_len };
		struct fi_msg_tagged cm = { .msg_iov = &biov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = 0x51,
					    .context = &pm };
		memset(rx, 0, big_len);
		FT_RC(fi_trecvmsg(a.ep, &cm, FI_CLAIM), 0);
		FT_CHECK(next(&a, &b, &e, &src, &err) == 1 && e.len == big_len && !memcmp(rx, tx, big_len),
			 "claimed large message received intact");
		pm.tag = 0x52;
		rc = 0;
		for (int i = 0; i < 2000 && rc != 1; i++) {
			FT_RC(fi_trecvmsg(a.ep, &pm, FI_PEEK | FI_DISCARD), 0);
			rc = next(&a, &b, &e, &src, &err);
		}
		FT_CHECK(rc == 1 && e.len == big_len, "peek+discard of a large message (rc %d)", rc);
		int sends = 0;
		for (int i = 0; i < 2; i++)
			sends += next(&b, &a, &e, &src, &err) == 1;
		FT_CHECK(sends == 2, "both large sends complete (%d)", sends);
		pm.tag = 0x52;
		FT_RC(fi_trecvmsg(a.ep, &pm, FI_PEEK), 0);
		FT_CHECK(next(&a, &b, &e, &src, &err) == -FI_ENOMSG, "the discarded message is gone");

		/* A large send with FI_DELIVERY_COMPLETE into a posted receive. */
		struct iovec siov = { tx, big_len };
		struct fi_msg_tagged sm = { .msg_iov = &siov, .iov_count = 1, .addr = b.peer, .tag = 0x53,
					    .context = tx };
		memset(rx, 0, big_len);
		FT_RC(fi_trecv(a.ep, rx, big_len, NULL, FI_ADDR_UNSPEC, 0x53, 0, rx), 0);
		FT_RC(fi_tsendmsg(b.ep, &sm, FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
		FT_CHECK(next(&a, &b, &e, &src, &err) == 1 && e.op_context == rx && !memcmp(rx, tx, big_len),
			 "large delivery-complete message received intact");
		FT_CHECK(next(&b, &a, &e, &src, &err) == 1 && e.op_context == tx, "delivery-complete send completes");
		free(tx);
		free(rx);
	}

	/* A full CQ refuses new work with -FI_EAGAIN instead of growing:
	 * c's CQ holds 8 entries; once 8 send completions sit unread, the
	 * next send is refused, and reading them makes room again. */
	struct side c;
	memset(&c, 0, sizeof(c));
	FT_CHECK(!open_side(&c, 8), "endpoint with an 8-entry CQ");
	FT_RC(fi_av_insert(c.av, &a.addr, 1, &c.peer, 0, NULL), 1);
	FT_RC(fi_send(c.ep, "hi", 3, NULL, c.peer, NULL), 0);
	FT_CHECK(next(&c, &a, &e, &src, &err) == 1, "first send (connects)");
	int sent = 0;
	ssize_t src_rc = 0;
	while (sent < 100 && (src_rc = fi_send(c.ep, "hi", 3, NULL, c.peer, NULL)) == 0)
		sent++;
	FT_CHECK(src_rc == -FI_EAGAIN && sent >= 8 && sent < 100, "send refused once the CQ is full (%d sent, rc %zd)",
		 sent, src_rc);
	for (int i = 0; i < sent; i++)
		FT_CHECK(next(&c, &a, &e, &src, &err) == 1, "queued completion %d", i);
	FT_RC(fi_send(c.ep, "hi", 3, NULL, c.peer, NULL), 0);
	FT_CHECK(next(&c, &a, &e, &src, &err) == 1, "send accepted after the CQ was read");
	fi_close(&c.ep->fid);
	fi_close(&c.av->fid);
	fi_close(&c.cq->fid);

	fi_close(&a.ep->fid);
	fi_close(&b.ep->fid);
	fi_close(&a.av->fid);
	fi_close(&b.av->fid);
	fi_close(&a.cq->fid);
	fi_close(&b.cq->fid);
	fi_freeinfo(hints);
	ft_info = rinfo;
	ft_close();
	return ft_report("fi_rdm_features_test");
}
