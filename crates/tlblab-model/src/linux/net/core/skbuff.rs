//! What loopback UDP and TCP sends allocate and receives free (net/core/skbuff.c, sock.c,
//! net/ipv4/ip_output.c, udp.c, tcp.c, drivers/net/loopback.c), as of v4.9, over [`Slab`] and
//! [`PageAlloc`]: the `sk_buff` from its cache, the head from `kmalloc_reserve` (or a
//! `kmalloc_large` block), TCP payload beyond the linear room in page fragments refilled at
//! `SKB_FRAG_PAGE_ORDER`, socket buffer sizes as `SO_SNDBUF`/`SO_RCVBUF` set them, and receive
//! queue drops. Mechanism only: the engine charges the protocol paths and the copies, and decides
//! which CPU runs what (the loopback softirq runs on the sender's CPU).
//!
//! Nagle's coalescing appends to a held tail ([`tcp_append`]; when, linux/net/ipv4/tcp.rs). Not
//! modelled here: TCP segmentation, windows and ACKs; the UDP
//! memory-pressure accounting (`sk_rmem_schedule`); GSO. Struct sizes are v4.9 x86-64 as the
//! docs/references/seeds-001-003-004.md#loopback-allocations gives them (`sizeof(struct sk_buff)` 232 and
//! `skb_shared_info` 320, both unverified exact).

use std::collections::VecDeque;

use crate::hw::coherence::CacheLine;
use crate::time::Ps;

use crate::linux::include::linux::mmzone::MigrateType;
use crate::linux::mm::page_alloc::{Env, PageAlloc};
use crate::linux::mm::slub::{hwcache_aligned_size, CacheId, Object, Slab, SlabError, SKBUFF_HEAD_CACHE};

/// `SKB_DATA_ALIGN()`: to a cache line.
pub fn skb_data_align(x: u64) -> u64 {
    x.div_ceil(64) * 64
}
/// `sizeof(struct skb_shared_info)` (about 320 on v4.9 x86-64,
/// docs/references/seeds-001-003-004.md#loopback-allocations).
pub const SKB_SHARED_INFO: u64 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))`.
pub fn skb_struct_aligned() -> u64 {
    hwcache_aligned_size(SKBUFF_HEAD_CACHE.1)
}
/// `SKB_TRUESIZE(x)`.
pub fn skb_truesize(x: u64) -> u64 {
    x + skb_struct_aligned() + skb_data_align(SKB_SHARED_INFO)
}
/// `TCP_SKB_MIN_TRUESIZE` = 2048 + `SKB_DATA_ALIGN(sizeof(struct sk_buff))`.
pub fn tcp_skb_min_truesize() -> u64 {
    2048 + skb_struct_aligned()
}
/// What `__alloc_skb(size)` asks `kmalloc_reserve` for: `SKB_DATA_ALIGN(size) +
/// SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`.
pub fn skb_head_size(size: u64) -> u64 {
    skb_data_align(size) + skb_data_align(SKB_SHARED_INFO)
}
/// An skb's `truesize` from its head (v4.9 `__alloc_skb`): `SKB_TRUESIZE(ksize(head) -
/// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)))`, `ksize` the slab object or the pages.
pub fn skb_truesize_of(slab: &Slab, head: Object) -> u64 {
    let ksize = match head {
        Object::Large { order, .. } => 4096 << order,
        Object::Slab { cache, .. } => slab.caches[cache].size,
    };
    skb_truesize(ksize - skb_data_align(SKB_SHARED_INFO))
}
/// `SOCK_MIN_SNDBUF` / `SOCK_MIN_RCVBUF` (v4.9 include/net/sock.h).
pub fn sock_min_sndbuf() -> u64 {
    2 * tcp_skb_min_truesize()
}
pub fn sock_min_rcvbuf() -> u64 {
    tcp_skb_min_truesize()
}
/// `sysctl_wmem_max` / `sysctl_rmem_max` default: `SKB_TRUESIZE(256) * 256` = 212992.
pub fn sk_mem_max() -> u64 {
    skb_truesize(256) * 256
}
/// `SKB_FRAG_PAGE_ORDER` = `get_order(32768)`.
pub const SKB_FRAG_PAGE_ORDER: u8 = 3;
/// UDP/IPv4 headers in front of the payload (8 + 20).
pub const UDP_IP_HEADERS: u64 = 28;
/// `LL_RESERVED_SPACE(loopback)`: hard_header_len 14 rounded up to `HH_DATA_MOD` (16).
pub const LOOPBACK_LL_SPACE: u64 = 16;
/// TCP's linear room on a scatter-gather device: `SKB_WITH_OVERHEAD(2048 - MAX_TCP_HEADER)`
/// (v4.9 `select_size`), with `MAX_TCP_HEADER` taken as 320 (unverified: it depends on the
/// configured link-layer headers). The head is then exactly a kmalloc-2048 object.
pub const TCP_MAX_HEADER: u64 = 320;
pub fn tcp_linear_room() -> u64 {
    2048 - TCP_MAX_HEADER - skb_data_align(SKB_SHARED_INFO)
}

/// `sock_setsockopt(SO_SNDBUF / SO_RCVBUF)` (v4.9): capped at the sysctl maximum, doubled, and
/// at least the minimum. Returns (sk_sndbuf, sk_rcvbuf).
pub fn setsockopt_bufs(sndbuf: u64, rcvbuf: u64) -> (u64, u64) {
    let max = sk_mem_max();
    ((sndbuf.min(max) * 2).max(sock_min_sndbuf()), (rcvbuf.min(max) * 2).max(sock_min_rcvbuf()))
}

/// One `sk_buff` in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkBuff {
    pub skb: Object,
    pub head: Object,
    /// Page-fragment references (`skb_shinfo(skb)->frags`): the `page_frag` page each points to.
    pub frags: Vec<u64>,
    pub len: u64,
    pub truesize: u64,
    /// Payload bytes the head may take (TCP's linear room; 0 when all payload goes to frags).
    pub room: u64,
    /// The CPU that allocated and filled it (the sender's: loopback runs the whole send there).
    pub cpu: u32,
}

/// The lines a receive loads of an `sk_buff` and its `skb_shared_info`: all of the struct's,
/// and the first of the shared info (`nr_frags`, `dataref`).
pub fn skb_meta_lines() -> u64 {
    skb_struct_aligned() / 64 + 1
}

/// The allocator events of one send or receive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetOutcome {
    pub done: Ps,
    /// Slab objects allocated (+) or freed (-).
    pub objects: i32,
    /// Page-allocator calls the slab layer or the frag refill made, and their zone->lock wait.
    pub page_calls: u32,
    pub zone_lock_wait: Ps,
    /// Time spent waiting for SLUB's `list_lock`s.
    pub list_lock_wait: Ps,
    pub dropped: bool,
}

impl NetOutcome {
    /// Adds what a later part of the same call did (its end time and its events).
    fn then(&mut self, o: NetOutcome) {
        self.done = o.done;
        self.objects += o.objects;
        self.page_calls += o.page_calls;
        self.zone_lock_wait += o.zone_lock_wait;
        self.list_lock_wait += o.list_lock_wait;
        self.dropped |= o.dropped;
    }

    /// Lock spin of any kind.
    pub fn lock_wait(&self) -> Ps {
        self.zone_lock_wait + self.list_lock_wait
    }
}

/// A receiving socket: `sk_rcvbuf`, `sk_rmem_alloc`, the receive queue, `sk_drops`, and (TCP)
/// how much of the front skb a read has already copied out (`copied_seq` within it).
#[derive(Debug, Clone, Default)]
pub struct RecvSock {
    pub rcvbuf: u64,
    pub rmem_alloc: u64,
    pub queue: VecDeque<SkBuff>,
    pub drops: u64,
    pub front_read: u64,
    /// The line of `sk_receive_queue` (its lock and list head; TCP's socket lock beside it) and
    /// the line of `sk_rmem_alloc`, which both ends of a flow store to
    /// (docs/references/linux-mm.md#socket-lines).
    pub queue_line: CacheLine,
    pub rmem_line: CacheLine,
}

/// A sending task's `struct page_frag` (`current->task_frag`) with the page's reference count.
#[derive(Debug, Clone, Default)]
pub struct PageFrag {
    pub page: Option<(u64, u8)>,
    pub offset: u64,
    /// References to each frag page still alive (the task's plus one per skb frag).
    refs: Vec<(u64, u8, u32)>,
    /// Blocks allocated (true) and freed (false) since the owner last took them, for the
    /// kernel's frame ownership map.
    pub events: Vec<(u64, u8, bool)>,
    /// The frag bytes filled since the owner last took them: the page, the offset and length
    /// copied into it, and whether the skb took a new reference on it (`page_ref_inc`).
    pub filled: Vec<(u64, u64, u64, bool)>,
}

/// The network paths' caches.
#[derive(Debug, Clone, Copy)]
pub struct NetCaches {
    pub skbuff_head: CacheId,
    pub skbuff_fclone: CacheId,
}

impl NetCaches {
    pub fn lookup(slab: &Slab) -> NetCaches {
        let [skbuff_head, skbuff_fclone] = slab.skbuff_caches();
        NetCaches { skbuff_head, skbuff_fclone }
    }
}

/// `__alloc_skb(size)`: the `sk_buff` from `cache`, the head from `kmalloc_reserve` of
/// `SKB_DATA_ALIGN(size) + SKB_DATA_ALIGN(sizeof(skb_shared_info))`. Returns the skb (with its
/// truesize from the head's `ksize`) and the outcome.
fn alloc_skb(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    cache: CacheId,
    cpu: u32,
    now: Ps,
    size: u64,
    env: Env,
) -> Result<(SkBuff, NetOutcome), SlabError> {
    let mut out = NetOutcome::default();
    let (skb, a) = slab.kmem_cache_alloc(pa, cache, cpu, now, env)?;
    let (head, b) = slab.kmalloc(pa, cpu, a.done, skb_head_size(size), env)?;
    for o in [a, b] {
        out.page_calls += o.page_order.is_some() as u32;
        out.zone_lock_wait += o.zone_lock_wait;
        out.list_lock_wait += o.list_lock_wait;
    }
    out.objects = 2;
    out.done = b.done;
    let truesize = skb_truesize_of(slab, head);
    Ok((SkBuff { skb, head, frags: Vec::new(), len: 0, truesize, room: 0, cpu }, out))
}

/// `udp_sendmsg` of `msg` bytes to a loopback socket, on `cpu`: the allocation
/// ([`udp_alloc`]) then the delivery ([`deliver`]), back to back (the kernel runs the two as
/// separate steps, so that the datagram reaches the queue when the sender's path has run).
#[allow(clippy::too_many_arguments)]
pub fn udp_send(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    caches: NetCaches,
    cpu: u32,
    now: Ps,
    msg: u64,
    rx: &mut RecvSock,
    env: Env,
) -> Result<NetOutcome, SlabError> {
    let (skb, mut out) = udp_alloc(slab, pa, caches, cpu, now, msg, env)?;
    out.then(deliver(slab, pa, cpu, out.done, skb, rx, true, env)?);
    Ok(out)
}

/// `ip_make_skb` for a `msg`-byte datagram on `cpu`: `sock_alloc_send_skb` of the whole
/// datagram linear (no frags on loopback's 64 KiB MTU).
pub fn udp_alloc(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    caches: NetCaches,
    cpu: u32,
    now: Ps,
    msg: u64,
    env: Env,
) -> Result<(SkBuff, NetOutcome), SlabError> {
    // __ip_append_data: alloclen = payload + UDP/IP headers; + hh_len + 15 for alignment.
    let size = msg + UDP_IP_HEADERS + LOOPBACK_LL_SPACE + 15;
    let (mut skb, out) = alloc_skb(slab, pa, caches.skbuff_head, cpu, now, size, env)?;
    skb.len = msg + UDP_IP_HEADERS;
    Ok((skb, out))
}

/// The loopback softirq on the sender's `cpu` delivering `skb` to `rx`: `loopback_xmit`
/// orphans it (the sender's wmem is released at once), and `__sock_queue_rcv_skb` queues it or,
/// for UDP (`may_drop`) when `rmem_alloc >= rcvbuf`, drops and frees it here (v4.9). TCP's
/// window keeps its sender from overrunning the queue, so TCP never drops here.
#[allow(clippy::too_many_arguments)]
pub fn deliver(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    cpu: u32,
    now: Ps,
    skb: SkBuff,
    rx: &mut RecvSock,
    may_drop: bool,
    env: Env,
) -> Result<NetOutcome, SlabError> {
    if may_drop && rx.rmem_alloc >= rx.rcvbuf {
        rx.drops += 1;
        let mut out = free_skb(slab, pa, cpu, now, skb, env)?;
        out.dropped = true;
        return Ok(out);
    }
    rx.rmem_alloc += skb.truesize;
    rx.queue.push_back(skb);
    Ok(NetOutcome { done: now, ..Default::default() })
}

/// `udp_recvmsg` / `tcp_recvmsg` taking one skb off `rx` on `cpu`: `skb_free_datagram` frees
/// the head (a slab object, or the `kmalloc_large` pages), drops the frag page references, and
/// frees the `sk_buff`; `sock_rfree` returns its truesize. `None` when the queue is empty.
pub fn recv(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    frag: Option<&mut PageFrag>,
    cpu: u32,
    now: Ps,
    rx: &mut RecvSock,
    env: Env,
) -> Result<Option<(u64, NetOutcome)>, SlabError> {
    let Some(mut skb) = rx.queue.pop_front() else { return Ok(None) };
    rx.rmem_alloc -= skb.truesize;
    let len = skb.len;
    let mut out = NetOutcome { done: now, ..Default::default() };
    if let Some(frag) = frag {
        for page in std::mem::take(&mut skb.frags) {
            let o = frag.put_page(pa, cpu, out.done, page, env)?;
            out.done = o.done;
            out.page_calls += o.page_calls;
            out.zone_lock_wait += o.zone_lock_wait;
        }
    }
    out.then(free_skb(slab, pa, cpu, out.done, skb, env)?);
    Ok(Some((len, out)))
}

/// `tcp_recvmsg` of at most `max` bytes from `rx` on `cpu`: copies from the front skb on
/// (`copied_seq` within it kept in `rx.front_read`), crossing into the next queued skb while the
/// read wants more, and frees each skb it uses up ([`recv`]'s frees, `sk_eat_skb`); a skb read
/// in part stays queued, charged to `rmem_alloc`. Returns the bytes copied, the truesize freed and
/// the outcome; `None` when the queue is empty.
#[allow(clippy::too_many_arguments)]
pub fn tcp_recv_upto(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    frag: &mut PageFrag,
    cpu: u32,
    now: Ps,
    rx: &mut RecvSock,
    max: u64,
    env: Env,
) -> Result<Option<(u64, u64, NetOutcome)>, SlabError> {
    if rx.queue.is_empty() {
        return Ok(None);
    }
    let (mut copied, mut freed) = (0, 0);
    let mut out = NetOutcome { done: now, ..Default::default() };
    while copied < max {
        let Some(front) = rx.queue.front() else { break };
        let take = (front.len - rx.front_read).min(max - copied);
        copied += take;
        rx.front_read += take;
        if rx.front_read < front.len {
            break;
        }
        rx.front_read = 0;
        let truesize = front.truesize;
        let (_, o) = recv(slab, pa, Some(&mut *frag), cpu, out.done, rx, env)?.expect("the front skb");
        out.then(o);
        freed += truesize;
    }
    Ok(Some((copied, freed, out)))
}

/// `kfree_skb` / `consume_skb` of an skb without frags: head, then the `sk_buff`.
fn free_skb(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    cpu: u32,
    now: Ps,
    skb: SkBuff,
    env: Env,
) -> Result<NetOutcome, SlabError> {
    assert!(skb.frags.is_empty(), "frag references are dropped by the caller");
    let a = slab.free(pa, cpu, now, skb.head, env)?;
    let b = slab.free(pa, cpu, a.done, skb.skb, env)?;
    let mut out = NetOutcome { done: b.done, objects: -2, ..Default::default() };
    for o in [a, b] {
        out.page_calls += o.page_order.is_some() as u32;
        out.zone_lock_wait += o.zone_lock_wait;
        out.list_lock_wait += o.list_lock_wait;
    }
    Ok(out)
}

impl PageFrag {
    /// `skb_page_frag_refill(32, pfrag)` (v4.9): keep the page while this task holds its only
    /// reference (restart at offset 0) or room remains; else drop our reference and allocate
    /// a new one at `SKB_FRAG_PAGE_ORDER` (order 0 when that fails).
    fn refill(
        &mut self,
        pa: &mut PageAlloc,
        cpu: u32,
        now: Ps,
        env: Env,
        out: &mut NetOutcome,
    ) -> Result<(), SlabError> {
        if let Some((pfn, order)) = self.page {
            if self.refs_of(pfn) == 1 {
                self.offset = 0;
                return Ok(());
            }
            if self.offset + 32 <= 4096 << order {
                return Ok(());
            }
            let o = self.put_page(pa, cpu, now, pfn, env)?;
            out.done = o.done;
            out.page_calls += o.page_calls;
            out.zone_lock_wait += o.zone_lock_wait;
        }
        for order in [SKB_FRAG_PAGE_ORDER, 0] {
            let a = pa.alloc_pages(cpu, out.done, order, MigrateType::Unmovable, env);
            out.done = a.done;
            out.page_calls += 1;
            out.zone_lock_wait += a.lock_wait;
            if let Some(pfn) = a.pfn {
                self.page = Some((pfn, order));
                self.offset = 0;
                self.refs.push((pfn, order, 1));
                self.events.push((pfn, order, true));
                return Ok(());
            }
        }
        Err(SlabError::OutOfMemory)
    }

    fn refs_of(&self, pfn: u64) -> u32 {
        self.refs.iter().find(|r| r.0 == pfn).map_or(0, |r| r.2)
    }

    /// `put_page`: the last reference frees the block.
    fn put_page(
        &mut self,
        pa: &mut PageAlloc,
        cpu: u32,
        now: Ps,
        pfn: u64,
        env: Env,
    ) -> Result<NetOutcome, SlabError> {
        let mut out = NetOutcome { done: now, ..Default::default() };
        let i = self.refs.iter().position(|r| r.0 == pfn).expect("a referenced frag page");
        self.refs[i].2 -= 1;
        if self.refs[i].2 == 0 {
            let (_, order, _) = self.refs.swap_remove(i);
            if self.page.map(|p| p.0) == Some(pfn) {
                self.page = None;
            }
            let f = pa.free_pages(cpu, now, pfn, order, env).map_err(|_| SlabError::OutOfMemory)?;
            self.events.push((pfn, order, false));
            out.done = f.done;
            out.page_calls = 1;
            out.zone_lock_wait = f.lock_wait;
        }
        Ok(out)
    }

    /// Frag pages alive (for checks).
    pub fn pages_alive(&self) -> usize {
        self.refs.len()
    }
}

/// `tcp_sendmsg` of `msg` bytes as one new skb (no coalescing): [`tcp_alloc`] then
/// [`deliver`] (TCP has no receive-queue drop: the window stops the sender).
#[allow(clippy::too_many_arguments)]
pub fn tcp_send(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    caches: NetCaches,
    frag: &mut PageFrag,
    cpu: u32,
    now: Ps,
    msg: u64,
    rx: &mut RecvSock,
    env: Env,
) -> Result<NetOutcome, SlabError> {
    let (skb, mut out) = tcp_alloc(slab, pa, caches, frag, cpu, now, msg, true, env)?;
    out.then(deliver(slab, pa, cpu, out.done, skb, rx, false, env)?);
    Ok(out)
}

/// The skb `tcp_sendmsg` builds for `msg` bytes: `sk_stream_alloc_skb` from
/// `skbuff_fclone_cache`. With `linear` (v4.9's `select_size`) a kmalloc-2048 head whose linear
/// room takes the first bytes; without (`tcp_paged_payload`, v5.10+: the head is
/// `MAX_TCP_HEADER` for the headers alone) every byte goes to the task's page fragment
/// (`sk_page_frag_refill`), one frag reference per page used. The truesize is the head's
/// (`SKB_TRUESIZE(skb_end_offset)`) plus the bytes copied into frags.
#[allow(clippy::too_many_arguments)]
pub fn tcp_alloc(
    slab: &mut Slab,
    pa: &mut PageAlloc,
    caches: NetCaches,
    frag: &mut PageFrag,
    cpu: u32,
    now: Ps,
    msg: u64,
    linear: bool,
    env: Env,
) -> Result<(SkBuff, NetOutcome), SlabError> {
    let room = if linear { tcp_linear_room() } else { 0 };
    let (mut skb, mut out) = alloc_skb(slab, pa, caches.skbuff_fclone, cpu, now, room + TCP_MAX_HEADER, env)?;
    skb.room = room;
    fill(pa, frag, &mut skb, cpu, msg, env, &mut out)?;
    Ok((skb, out))
}

/// `tcp_sendmsg` appending `msg` bytes to the write queue's tail `skb` that Nagle holds (not yet
/// transmitted): what fits of the linear room, the rest in the task's page fragment, as
/// [`tcp_alloc`] fills a new one. Returns the page-allocator outcome.
pub fn tcp_append(
    pa: &mut PageAlloc,
    frag: &mut PageFrag,
    skb: &mut SkBuff,
    cpu: u32,
    now: Ps,
    msg: u64,
    env: Env,
) -> Result<NetOutcome, SlabError> {
    let mut out = NetOutcome { done: now, ..Default::default() };
    fill(pa, frag, skb, cpu, msg, env, &mut out)?;
    Ok(out)
}

/// Copies `msg` more bytes into `skb`: the linear room left first (`skb_availroom`), then page
/// fragments (`skb_copy_to_page_nocache`), one frag reference per page used.
fn fill(
    pa: &mut PageAlloc,
    frag: &mut PageFrag,
    skb: &mut SkBuff,
    cpu: u32,
    msg: u64,
    env: Env,
    out: &mut NetOutcome,
) -> Result<(), SlabError> {
    let linear = skb.room.saturating_sub(skb.len).min(msg);
    let mut left = msg - linear;
    while left > 0 {
        frag.refill(pa, cpu, out.done, env, out)?;
        let (pfn, order) = frag.page.expect("refilled");
        let (start, copy) = (frag.offset, left.min((4096 << order) - frag.offset));
        frag.offset += copy;
        left -= copy;
        skb.truesize += copy;
        let new_ref = skb.frags.last() != Some(&pfn);
        if new_ref {
            skb.frags.push(pfn);
            let i = frag.refs.iter().position(|r| r.0 == pfn).expect("the frag page");
            frag.refs[i].2 += 1;
        }
        frag.filled.push((pfn, start, copy, new_ref));
    }
    skb.len += msg;
    Ok(())
}

#[cfg(test)]
mod tests;
