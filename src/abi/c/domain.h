@@TYPES@@
/* A ze device number: driver index in the high 16 bits, device index low. */
static inline int fi_hmem_ze_device(int driver_index, int device_index)
{
	return driver_index << 16 | device_index;
}

static inline int fi_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, void *context)
{
	return fabric->ops->domain(fabric, info, domain, context);
}

static inline int fi_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, uint64_t flags, void *context)
{
	if (!flags)
		return fi_domain(fabric, info, domain, context);
	return FI_CHECK_OP(fabric->ops, struct fi_ops_fabric, domain2) ?
		fabric->ops->domain2(fabric, info, domain, flags, context) :
		-FI_ENOSYS;
}

static inline int fi_domain_bind(struct fid_domain *domain, struct fid *fid, uint64_t flags)
{
	return domain->fid.ops->bind(&domain->fid, fid, flags);
}

static inline int fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context)
{
	return domain->ops->cq_open(domain, attr, cq, context);
}

static inline int fi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context)
{
	return domain->ops->cntr_open(domain, attr, cntr, context);
}

static inline int fi_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	return fabric->ops->wait_open(fabric, attr, waitset);
}

static inline int fi_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	return domain->ops->poll_open(domain, attr, pollset);
}

static inline int fi_mr_reg(struct fid_domain *domain, const void *buf, size_t len, uint64_t acs, uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	return domain->mr->reg(&domain->fid, buf, len, acs, offset,
				requested_key, flags, mr, context);
}

static inline int fi_mr_regv(struct fid_domain *domain, const struct iovec *iov, size_t count, uint64_t acs, uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	return domain->mr->regv(&domain->fid, iov, count, acs, offset,
				 requested_key, flags, mr, context);
}

static inline int fi_mr_regattr(struct fid_domain *domain, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr)
{
	return domain->mr->regattr(&domain->fid, attr, flags, mr);
}

static inline void *fi_mr_desc(struct fid_mr *mr)
{
	return mr->mem_desc;
}

static inline uint64_t fi_mr_key(struct fid_mr *mr)
{
	return mr->key;
}

static inline int fi_mr_raw_attr(struct fid_mr *mr, uint64_t *base_addr, uint8_t *raw_key, size_t *key_size, uint64_t flags)
{
	struct fi_mr_raw_attr a;

	a.flags = flags;
	a.base_addr = base_addr;
	a.raw_key = raw_key;
	a.key_size = key_size;
	return mr->fid.ops->control(&mr->fid, FI_GET_RAW_MR, &a);
}

static inline int fi_mr_map_raw(struct fid_domain *domain, uint64_t base_addr, uint8_t *raw_key, size_t key_size, uint64_t *key, uint64_t flags)
{
	struct fi_mr_map_raw m;

	m.flags = flags;
	m.base_addr = base_addr;
	m.raw_key = raw_key;
	m.key_size = key_size;
	m.key = key;
	return domain->fid.ops->control(&domain->fid, FI_MAP_RAW_MR, &m);
}

static inline int fi_mr_unmap_key(struct fid_domain *domain, uint64_t key)
{
	return domain->fid.ops->control(&domain->fid, FI_UNMAP_KEY, &key);
}

static inline int fi_mr_bind(struct fid_mr *mr, struct fid *bfid, uint64_t flags)
{
	return mr->fid.ops->bind(&mr->fid, bfid, flags);
}

static inline int fi_mr_refresh(struct fid_mr *mr, const struct iovec *iov, size_t count, uint64_t flags)
{
	struct fi_mr_modify m;

	memset(&m, 0, sizeof(m));
	m.flags = flags;
	m.attr.mr_iov = iov;
	m.attr.iov_count = count;
	return mr->fid.ops->control(&mr->fid, FI_REFRESH, &m);
}

static inline int fi_mr_enable(struct fid_mr *mr)
{
	return mr->fid.ops->control(&mr->fid, FI_ENABLE, NULL);
}

static inline int fi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context)
{
	return domain->ops->av_open(domain, attr, av, context);
}

static inline int fi_av_bind(struct fid_av *av, struct fid *fid, uint64_t flags)
{
	return av->fid.ops->bind(&av->fid, fid, flags);
}

static inline int fi_av_insert(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return av->ops->insert(av, addr, count, fi_addr, flags, context);
}

static inline int fi_av_insertsvc(struct fid_av *av, const char *node, const char *service, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return av->ops->insertsvc(av, node, service, fi_addr, flags, context);
}

static inline int fi_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service, size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return av->ops->insertsym(av, node, nodecnt, service, svccnt, fi_addr, flags, context);
}

static inline int fi_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	return av->ops->remove(av, fi_addr, count, flags);
}

static inline int fi_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	return av->ops->lookup(av, fi_addr, addr, addrlen);
}

static inline const char *fi_av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	return av->ops->straddr(av, addr, buf, len);
}

static inline int fi_av_insert_auth_key(struct fid_av *av, const void *auth_key,
					size_t auth_key_size, fi_addr_t *fi_addr, uint64_t flags)
{
	if (!FI_CHECK_OP(av->ops, struct fi_ops_av, insert_auth_key))
		return -FI_ENOSYS;
	return av->ops->insert_auth_key(av, auth_key, auth_key_size, fi_addr, flags);
}

static inline int fi_av_lookup_auth_key(struct fid_av *av, fi_addr_t addr, void *auth_key,
					size_t *auth_key_size)
{
	if (!FI_CHECK_OP(av->ops, struct fi_ops_av, lookup_auth_key))
		return -FI_ENOSYS;
	return av->ops->lookup_auth_key(av, addr, auth_key, auth_key_size);
}

static inline int fi_av_set_user_id(struct fid_av *av, fi_addr_t fi_addr, fi_addr_t user_id,
				    uint64_t flags)
{
	if (!FI_CHECK_OP(av->ops, struct fi_ops_av, set_user_id))
		return -FI_ENOSYS;
	return av->ops->set_user_id(av, fi_addr, user_id, flags);
}

static inline fi_addr_t fi_rx_addr(fi_addr_t fi_addr, int rx_index, int rx_ctx_bits)
{
	return (fi_addr_t) (((uint64_t) rx_index << (64 - rx_ctx_bits)) | fi_addr);
}

/* The address of group `group_id` of peer `fi_addr` (group id in the high 32 bits). */
static inline fi_addr_t fi_group_addr(fi_addr_t fi_addr, uint32_t group_id)
{
	return (fi_addr_t) (((uint64_t) group_id << 32) | fi_addr);
}

