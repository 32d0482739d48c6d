/*
 * fi_av_test: address vectors, FI_AV_MAP and FI_AV_TABLE. Insert, lookup,
 * straddr, remove, FI_SYNC_ERR per-address errors, fi_av_insertsvc,
 * fi_av_insertsym, FI_EVENT inserts reported on a bound EQ, fi_rx_addr.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>

static struct sockaddr_in sin_of(uint16_t port)
{
	struct sockaddr_in s;
	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	s.sin_addr.s_addr = htonl(0x7f000001);
	return s;
}

int main(int argc, char **argv)
{
	enum fi_av_type types[] = { FI_AV_MAP, FI_AV_TABLE };

	ft_parse(argc, argv);
	if (ft_open())
		return 1;
	for (int t = 0; t < 2; t++) {
		struct fi_av_attr attr;
		struct fid_av *av;
		struct sockaddr_in a[3] = { sin_of(1000), sin_of(1001), sin_of(1002) }, out;
		fi_addr_t fa[3];
		size_t len = sizeof(out);
		char buf[64];

		memset(&attr, 0, sizeof(attr));
		attr.type = types[t];
		FT_RC(fi_av_open(ft_domain, &attr, &av, NULL), 0);
		FT_RC(fi_av_insert(av, a, 3, fa, 0, NULL), 3);
		FT_RC(fi_av_lookup(av, fa[1], &out, &len), 0);
		FT_CHECK(len == sizeof(out) && out.sin_port == htons(1001), "lookup returns the address");
		len = sizeof(buf);
		FT_CHECK(fi_av_straddr(av, &a[2], buf, &len) == buf &&
			 strcmp(buf, "fi_sockaddr_in://127.0.0.1:1002") == 0, "straddr '%s'", buf);
		FT_RC(fi_av_remove(av, &fa[0], 1, 0), 0);
		len = sizeof(out);
		FT_CHECK(fi_av_lookup(av, fa[0], &out, &len) < 0, "removed address is gone");
		FT_RC(fi_av_insertsvc(av, "127.0.0.1", "2000", &fa[0], 0, NULL), 1);
		FT_RC(fi_av_insertsym(av, "127.0.0.1", 2, "3000", 2, fa, 0, NULL), 4);
		/* FI_SYNC_ERR: one bad address among good ones. */
		{
			struct sockaddr_in two[2] = { sin_of(4000), sin_of(4001) };
			int errs[2] = { -1, -1 };
			two[1].sin_family = 0xffff;
			int n = fi_av_insert(av, two, 2, fa, FI_SYNC_ERR, errs);
			FT_CHECK(n == 1 && errs[0] == 0 && errs[1] != 0 && fa[1] == FI_ADDR_NOTAVAIL,
				 "FI_SYNC_ERR: n=%d errs=%d,%d", n, errs[0], errs[1]);
		}
		/* FI_EVENT: completion reported on the bound EQ. */
		{
			struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
			struct fid_eq *eq;
			struct fi_eq_entry e;
			uint32_t ev;
			FT_RC(fi_eq_open(ft_fabric, &ea, &eq, NULL), 0);
			FT_RC(fi_av_bind(av, &eq->fid, 0), 0);
			FT_RC(fi_av_insert(av, a, 2, fa, FI_EVENT, &e), 0);
			FT_CHECK(fi_eq_sread(eq, &ev, &e, sizeof(e), 1000, 0) == sizeof(e) &&
				 ev == FI_AV_COMPLETE && e.data == 2, "FI_AV_COMPLETE with count 2");
			FT_RC(fi_close(&eq->fid), -FI_EBUSY);
			FT_RC(fi_close(&av->fid), 0);
			FT_RC(fi_close(&eq->fid), 0);
		}
	}
	FT_CHECK(fi_rx_addr(5, 3, 4) == ((3ULL << 60) | 5), "fi_rx_addr");
	ft_close();
	return ft_report("fi_av_test");
}
