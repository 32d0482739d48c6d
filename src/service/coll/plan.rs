//! What each collective exchanges: for the calling member, the messages
//! it sends and receives (each to or from one other member, all posted
//! at once), the local copies made at the call, and what is done once
//! all of them completed.
//!
//! The algorithms are direct: every member that has data for another
//! sends it there, with no relaying. A reduction gathers every member's
//! contribution at each member that needs the result and combines them
//! in rank order, so all members compute the same bits (floating point
//! included). Nothing depends on a message's content to decide what to
//! send next, so no step is ever posted from inside a completion (which
//! runs under the provider's lock).

use crate::abi::*;
use crate::error::{Error, Result};
use crate::ops::IoBuf;
use crate::service::atomic::{self, AtomicKind, AtomicOp};

/// A collective and its own arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Barrier,
    Broadcast {
        root: usize,
    },
    Allreduce {
        op: fi_op,
    },
    Allgather,
    Reduce {
        root: usize,
        op: fi_op,
    },
    Scatter {
        root: usize,
    },
    Gather {
        root: usize,
    },
    /// Block `j` of each member's `buf` goes to member `j`.
    Alltoall,
    /// Block `j` of every member's `buf`, reduced, goes to member `j`.
    ReduceScatter {
        op: fi_op,
    },
}

/// One message of the calling member: to or from member `peer`.
#[derive(Debug, Clone, Copy)]
pub struct Post {
    pub peer: usize,
    pub send: bool,
    /// The bytes sent, or where the received ones go.
    pub buf: Where,
}

/// Where a message's bytes are.
#[derive(Debug, Clone, Copy)]
pub enum Where {
    /// The application's memory.
    App(IoBuf),
    /// The contribution buffer of member `r` (reductions), held by the
    /// operation.
    Temp(usize),
    /// Nothing (a barrier's message).
    Empty,
}

/// What is done once every message completed.
#[derive(Debug, Clone, Copy)]
pub enum Finish {
    Nothing,
    /// Combines the contributions in rank order with `op` into `into`.
    Reduce {
        into: IoBuf,
        op: AtomicOp,
    },
}

/// The calling member's part of one collective.
pub struct Plan {
    pub posts: Vec<Post>,
    /// Contribution buffers by rank (reductions; empty otherwise).
    pub temps: Vec<Vec<u8>>,
    pub finish: Finish,
}

/// The buffers of a call: `buf` (input; broadcast's in/out), `result`,
/// each `count` elements of `size` bytes where the collective says: per
/// member, so gathered results, the root's scatter input and all-to-all
/// and reduce-scatter inputs hold a block of `count` per member.
#[derive(Debug, Clone, Copy)]
pub struct Bufs {
    pub buf: IoBuf,
    pub result: IoBuf,
    pub count: usize,
    pub datatype: fi_datatype,
}

/// Whether `op` on `dt` is a reduction collectives offer: the base
/// atomic operations that combine two values (not `FI_ATOMIC_WRITE`).
fn reduction(op: fi_op, dt: fi_datatype) -> Option<usize> {
    if !(FI_MIN..=FI_BXOR).contains(&op) {
        return None;
    }
    atomic::valid(AtomicKind::Base, op, dt)
}

/// `fi_query_collective`: Ok((most elements per call, element size))
/// when `coll` is offered for `op` and `dt`.
pub fn query(coll: fi_collective_op, op: fi_op, dt: fi_datatype) -> Result<(usize, usize)> {
    const MAX_BYTES: usize = 1 << 30;
    let size = match coll {
        FI_BARRIER => return Ok((0, 0)),
        FI_BROADCAST | FI_ALLGATHER | FI_SCATTER | FI_GATHER | FI_ALLTOALL => {
            atomic::datatype_size(dt).ok_or(Error::OpNotSupp)?
        }
        FI_ALLREDUCE | FI_REDUCE | FI_REDUCE_SCATTER => {
            reduction(op, dt).ok_or(Error::OpNotSupp)?
        }
        _ => return Err(Error::OpNotSupp),
    };
    Ok((MAX_BYTES / size, size))
}

/// The byte length of `count` elements of `dt`, checked.
fn bytes(count: usize, dt: fi_datatype) -> Result<usize> {
    let size = atomic::datatype_size(dt).ok_or(Error::Inval)?;
    count.checked_mul(size).ok_or(Error::Inval)
}

/// Checks that `b` holds at least `len` bytes.
fn fits(b: &IoBuf, len: usize, what: &str) -> Result<()> {
    if b.len() < len || (len > 0 && b.addr() == 0) {
        crate::core_warn!(
            FI_LOG_EP_DATA,
            "collective: {what} holds {} bytes, {len} needed",
            b.len()
        );
        return Err(Error::Inval);
    }
    Ok(())
}

/// Combining the contributions with `op` into the first `len` bytes of
/// `b.result`.
fn reduce_into(b: &Bufs, op: fi_op, len: usize) -> Finish {
    Finish::Reduce {
        into: b.result.slice(0, len),
        op: AtomicOp {
            kind: AtomicKind::Base,
            op,
            datatype: b.datatype,
            count: b.count,
        },
    }
}

/// Member `me`'s part of collective `kind` among `n` members. Copies
/// made at the call (a member's own block) are done here.
pub fn plan(kind: Kind, n: usize, me: usize, b: &Bufs) -> Result<Plan> {
    let others = (0..n).filter(move |r| *r != me);
    let mut posts = Vec::new();
    let mut temps = Vec::new();
    let mut finish = Finish::Nothing;
    let each = |peer, send, buf| Post { peer, send, buf };
    match kind {
        Kind::Barrier => {
            for r in others {
                posts.push(each(r, true, Where::Empty));
                posts.push(each(r, false, Where::Empty));
            }
        }
        Kind::Broadcast { root } => {
            let len = bytes(b.count, b.datatype)?;
            fits(&b.buf, len, "the broadcast buffer")?;
            let buf = Where::App(b.buf.slice(0, len));
            if me == root {
                posts.extend(others.map(|r| each(r, true, buf)));
            } else {
                posts.push(each(root, false, buf));
            }
        }
        Kind::Allreduce { op } | Kind::Reduce { op, .. } => {
            reduction(op, b.datatype).ok_or(Error::OpNotSupp)?;
            let len = bytes(b.count, b.datatype)?;
            fits(&b.buf, len, "the input buffer")?;
            let gets = match kind {
                Kind::Reduce { root, .. } => me == root,
                _ => true,
            };
            if gets {
                fits(&b.result, len, "the result buffer")?;
                temps = vec![vec![0u8; len]; n];
                temps[me].copy_from_slice(&b.buf.as_slice()[..len]);
                finish = reduce_into(b, op, len);
            }
            let src = Where::App(b.buf.slice(0, len));
            match kind {
                Kind::Reduce { root, .. } if me != root => posts.push(each(root, true, src)),
                Kind::Reduce { .. } => {
                    posts.extend(others.map(|r| each(r, false, Where::Temp(r))));
                }
                _ => {
                    for r in others {
                        posts.push(each(r, true, src));
                        posts.push(each(r, false, Where::Temp(r)));
                    }
                }
            }
        }
        Kind::Allgather => {
            let len = bytes(b.count, b.datatype)?;
            fits(&b.buf, len, "the input buffer")?;
            fits(
                &b.result,
                len.checked_mul(n).ok_or(Error::Inval)?,
                "the result buffer",
            )?;
            b.result.write_at(me * len, &b.buf.as_slice()[..len]);
            for r in others {
                posts.push(each(r, true, Where::App(b.buf.slice(0, len))));
                posts.push(each(r, false, Where::App(b.result.slice(r * len, len))));
            }
        }
        Kind::Scatter { root } => {
            let len = bytes(b.count, b.datatype)?;
            fits(&b.result, len, "the result buffer")?;
            if me == root {
                fits(
                    &b.buf,
                    len.checked_mul(n).ok_or(Error::Inval)?,
                    "the root's buffer",
                )?;
                b.result
                    .write_at(0, &b.buf.as_slice()[me * len..(me + 1) * len]);
                posts.extend(others.map(|r| each(r, true, Where::App(b.buf.slice(r * len, len)))));
            } else {
                posts.push(each(root, false, Where::App(b.result.slice(0, len))));
            }
        }
        Kind::Gather { root } => {
            let len = bytes(b.count, b.datatype)?;
            fits(&b.buf, len, "the input buffer")?;
            if me == root {
                fits(
                    &b.result,
                    len.checked_mul(n).ok_or(Error::Inval)?,
                    "the root's result buffer",
                )?;
                b.result.write_at(me * len, &b.buf.as_slice()[..len]);
                posts.extend(
                    others.map(|r| each(r, false, Where::App(b.result.slice(r * len, len)))),
                );
            } else {
                posts.push(each(root, true, Where::App(b.buf.slice(0, len))));
            }
        }
        Kind::Alltoall => {
            let len = bytes(b.count, b.datatype)?;
            let all = len.checked_mul(n).ok_or(Error::Inval)?;
            fits(&b.buf, all, "the input buffer")?;
            fits(&b.result, all, "the result buffer")?;
            b.result
                .write_at(me * len, &b.buf.as_slice()[me * len..(me + 1) * len]);
            for r in others {
                posts.push(each(r, true, Where::App(b.buf.slice(r * len, len))));
                posts.push(each(r, false, Where::App(b.result.slice(r * len, len))));
            }
        }
        Kind::ReduceScatter { op } => {
            reduction(op, b.datatype).ok_or(Error::OpNotSupp)?;
            let len = bytes(b.count, b.datatype)?;
            fits(
                &b.buf,
                len.checked_mul(n).ok_or(Error::Inval)?,
                "the input buffer",
            )?;
            fits(&b.result, len, "the result buffer")?;
            temps = vec![vec![0u8; len]; n];
            temps[me].copy_from_slice(&b.buf.as_slice()[me * len..(me + 1) * len]);
            finish = reduce_into(b, op, len);
            for r in others {
                posts.push(each(r, true, Where::App(b.buf.slice(r * len, len))));
                posts.push(each(r, false, Where::Temp(r)));
            }
        }
    }
    Ok(Plan {
        posts,
        temps,
        finish,
    })
}

/// Runs `finish` over the contributions `temps` (rank order).
pub fn run_finish(finish: &Finish, temps: &mut [Vec<u8>]) -> Result<()> {
    let Finish::Reduce { into, op } = finish else {
        return Ok(());
    };
    let Some((first, rest)) = temps.split_first_mut() else {
        return Ok(());
    };
    for t in rest.iter() {
        // SAFETY: `first` is our own buffer of `op.count` elements (made
        // by `plan` at the length the count needs); nothing else sees it.
        unsafe { atomic::apply(*op, first.as_mut_ptr(), t, &[], None) }
            .map_err(|_| Error::OpNotSupp)?;
    }
    into.write_at(0, first);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(b: &mut [u8]) -> IoBuf {
        // SAFETY: the test keeps `b` alive and untouched while the IoBuf is used.
        unsafe { IoBuf::new(b.as_mut_ptr(), b.len()) }
    }

    #[test]
    fn a_sum_combines_every_contribution_in_rank_order() {
        let mut input = 5u64.to_ne_bytes();
        let mut out = [0u8; 8];
        let b = Bufs {
            buf: buf(&mut input),
            result: buf(&mut out),
            count: 1,
            datatype: FI_UINT64,
        };
        let mut p = plan(Kind::Allreduce { op: FI_SUM }, 3, 1, &b).unwrap();
        assert_eq!(p.posts.len(), 4, "a send and a receive per other member");
        p.temps[0] = 1u64.to_ne_bytes().to_vec();
        p.temps[2] = 10u64.to_ne_bytes().to_vec();
        run_finish(&p.finish, &mut p.temps).unwrap();
        assert_eq!(u64::from_ne_bytes(out), 16);
    }

    #[test]
    fn rooted_collectives_post_only_what_the_member_needs() {
        let mut input = [1u8; 24];
        let mut out = [0u8; 24];
        let b = Bufs {
            buf: buf(&mut input),
            result: buf(&mut out),
            count: 1,
            datatype: FI_UINT64,
        };
        let root = plan(Kind::Scatter { root: 0 }, 3, 0, &b).unwrap();
        assert!(root.posts.iter().all(|p| p.send) && root.posts.len() == 2);
        let leaf = plan(Kind::Gather { root: 2 }, 3, 1, &b).unwrap();
        assert_eq!((leaf.posts.len(), leaf.posts[0].peer), (1, 2));
        assert!(plan(
            Kind::Allreduce {
                op: FI_ATOMIC_WRITE
            },
            3,
            0,
            &b
        )
        .is_err());
        assert!(
            query(FI_ALLTOALL, FI_NOOP, FI_VOID).is_err(),
            "no data type"
        );
        assert!(query(FI_REDUCE_SCATTER, FI_ATOMIC_WRITE, FI_UINT64).is_err());
        assert_eq!(query(FI_ALLREDUCE, FI_SUM, FI_UINT64).unwrap().1, 8);
    }
}
