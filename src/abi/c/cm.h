/* Naming: these take a bare fid that must be embedded in a fid_ep. */

static inline int
fi_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct fid_ep *owner = (struct fid_ep *) fid /* fid is its first member */;
	return owner->cm->setname(fid, addr, addrlen);
}

static inline int
fi_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fid_ep *owner = (struct fid_ep *) fid /* fid is its first member */;
	return owner->cm->getname(fid, addr, addrlen);
}

static inline int
fi_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return ep->cm->getpeer(ep, addr, addrlen);
}

/* Connection setup and teardown. */

static inline int
fi_listen(struct fid_pep *pep)
{
	return pep->cm->listen(pep);
}

static inline int
fi_connect(struct fid_ep *ep, const void *addr,
	   const void *param, size_t paramlen)
{
	return ep->cm->connect(ep, addr, param, paramlen);
}

static inline int
fi_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return ep->cm->accept(ep, param, paramlen);
}

static inline int
fi_reject(struct fid_pep *pep, fid_t handle,
	  const void *param, size_t paramlen)
{
	return pep->cm->reject(pep, handle, param, paramlen);
}

static inline int
fi_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return ep->cm->shutdown(ep, flags);
}

/* Group membership; join is a later slot, so older tables may lack it. */

static inline int
fi_join(struct fid_ep *ep, const void *addr, uint64_t flags,
	struct fid_mc **mc, void *context)
{
	if (!FI_CHECK_OP(ep->cm, struct fi_ops_cm, join))
		return -FI_ENOSYS;
	return ep->cm->join(ep, addr, flags, mc, context);
}

static inline fi_addr_t
fi_mc_addr(struct fid_mc *mc)
{
	return mc->fi_addr;
}
