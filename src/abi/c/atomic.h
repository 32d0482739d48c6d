/* Plain atomics: the target is updated, nothing comes back. */

static inline ssize_t
fi_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
	  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	  enum fi_datatype datatype, enum fi_op op, void *context)
{
	return ep->atomic->write(ep, buf, count, desc, dest_addr, addr, key,
				 datatype, op, context);
}

static inline ssize_t
fi_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
	   size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
	   enum fi_datatype datatype, enum fi_op op, void *context)
{
	return ep->atomic->writev(ep, iov, desc, count, dest_addr, addr, key,
				  datatype, op, context);
}

static inline ssize_t
fi_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
	     uint64_t flags)
{
	return ep->atomic->writemsg(ep, msg, flags);
}

static inline ssize_t
fi_inject_atomic(struct fid_ep *ep, const void *buf, size_t count,
		 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		 enum fi_datatype datatype, enum fi_op op)
{
	return ep->atomic->inject(ep, buf, count, dest_addr, addr, key,
				  datatype, op);
}

/* Fetching atomics: the target's previous value lands in result. */

static inline ssize_t
fi_fetch_atomic(struct fid_ep *ep, const void *buf, size_t count,
		void *desc, void *result, void *result_desc,
		fi_addr_t dest_addr, uint64_t addr, uint64_t key,
		enum fi_datatype datatype, enum fi_op op, void *context)
{
	return ep->atomic->readwrite(ep, buf, count, desc, result,
				     result_desc, dest_addr, addr, key,
				     datatype, op, context);
}

static inline ssize_t
fi_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
		 size_t count, struct fi_ioc *resultv, void **result_desc,
		 size_t result_count, fi_addr_t dest_addr, uint64_t addr,
		 uint64_t key, enum fi_datatype datatype, enum fi_op op,
		 void *context)
{
	return ep->atomic->readwritev(ep, iov, desc, count, resultv,
				      result_desc, result_count, dest_addr,
				      addr, key, datatype, op, context);
}

static inline ssize_t
fi_fetch_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
		   struct fi_ioc *resultv, void **result_desc,
		   size_t result_count, uint64_t flags)
{
	return ep->atomic->readwritemsg(ep, msg, resultv, result_desc,
					result_count, flags);
}

/* Compare atomics: update only when the compare operand matches. */

static inline ssize_t
fi_compare_atomic(struct fid_ep *ep, const void *buf, size_t count,
		  void *desc, const void *compare, void *compare_desc,
		  void *result, void *result_desc, fi_addr_t dest_addr,
		  uint64_t addr, uint64_t key, enum fi_datatype datatype,
		  enum fi_op op, void *context)
{
	return ep->atomic->compwrite(ep, buf, count, desc, compare,
				     compare_desc, result, result_desc,
				     dest_addr, addr, key, datatype, op,
				     context);
}

static inline ssize_t
fi_compare_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
		   void **desc, size_t count, const struct fi_ioc *comparev,
		   void **compare_desc, size_t compare_count,
		   struct fi_ioc *resultv, void **result_desc,
		   size_t result_count, fi_addr_t dest_addr, uint64_t addr,
		   uint64_t key, enum fi_datatype datatype, enum fi_op op,
		   void *context)
{
	return ep->atomic->compwritev(ep, iov, desc, count, comparev,
				      compare_desc, compare_count, resultv,
				      result_desc, result_count, dest_addr,
				      addr, key, datatype, op, context);
}

static inline ssize_t
fi_compare_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
		     const struct fi_ioc *comparev, void **compare_desc,
		     size_t compare_count, struct fi_ioc *resultv,
		     void **result_desc, size_t result_count, uint64_t flags)
{
	return ep->atomic->compwritemsg(ep, msg, comparev, compare_desc,
					compare_count, resultv, result_desc,
					result_count, flags);
}

/* Capability queries. */

static inline int
fi_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype,
	       enum fi_op op, size_t *count)
{
	return ep->atomic->writevalid(ep, datatype, op, count);
}

static inline int
fi_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype,
		     enum fi_op op, size_t *count)
{
	return ep->atomic->readwritevalid(ep, datatype, op, count);
}

static inline int
fi_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype,
		       enum fi_op op, size_t *count)
{
	return ep->atomic->compwritevalid(ep, datatype, op, count);
}

/* query_atomic is a later domain slot, so older tables may lack it. */
static inline int
fi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	if (!FI_CHECK_OP(domain->ops, struct fi_ops_domain, query_atomic))
		return -FI_ENOSYS;
	return domain->ops->query_atomic(domain, datatype, op, attr, flags);
}
