//! The optional profile sections of the seed-004 and noise mechanisms: `[noise]`,
//! `[page_alloc]`, `[slab]`, `[ipc]`, `[net]`, `[fs]`, and page reclaim's `[reclaim]`.

use serde::{Deserialize, Serialize};

use super::{check_sourced, err, Confidence, MachineProfile, ProfileError, Sourced};

/// Declares [`Section`] and, per section, the accessor that returns it or an error naming it.
macro_rules! sections {
    ($($(#[$doc:meta])* $variant:ident: $key:ident: $ty:ty, needed by $needed:literal;)*) => {
        /// An optional profile section the kernel paths of a workload need.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Section {
            $($(#[$doc])* $variant,)*
        }

        impl Section {
            /// The section's TOML key.
            pub const fn key(self) -> &'static str {
                match self {
                    $(Section::$variant => stringify!($key),)*
                }
            }
        }

        impl MachineProfile {
            $(
                #[doc = concat!("The `[", stringify!($key), "]` section, or an error naming it.")]
                pub fn $key(&self) -> Result<&$ty, ProfileError> {
                    self.$key.as_ref().ok_or_else(|| {
                        let what = concat!("has no [", stringify!($key), "] section (needed by ", $needed, ")");
                        err(stringify!($key), format!("profile `{}` {what}", self.name))
                    })
                }
            )*

            /// Whether the profile has `section`; if not, the error its accessor gives.
            pub fn require(&self, section: Section) -> Result<(), ProfileError> {
                match section {
                    $(Section::$variant => self.$key().map(|_| ()),)*
                }
            }
        }
    };
}

sections! {
    /// The buddy allocator and per-CPU lists (linux/mm/page_alloc.rs): every x86 run.
    PageAlloc: page_alloc: PageAllocProfile, needed by "the page allocator";
    /// Reclaim and the page-cache fill (linux/mm/vmscan.rs): runs that size the machine's memory.
    Reclaim: reclaim: ReclaimProfile, needed by "page reclaim";
    /// SLUB (linux/mm/slub.rs).
    Slab: slab: SlabProfile, needed by "SLUB";
    /// Pipes and AF_UNIX (linux/fs/pipe.rs, linux/net/unix/af_unix.rs).
    Ipc: ipc: IpcProfile, needed by "pipes and AF_UNIX sockets";
    /// The loopback socket paths (linux/net/socket.rs).
    Net: net: NetProfile, needed by "the network workloads";
    /// File creation (linux/fs/namei.rs).
    Fs: fs: FsProfile, needed by "fsmark";
    /// Swap to zram: shmem's swap-out and swap-in (linux/mm/shmem.rs, linux/drivers/block/zram.rs).
    Swap: swap: SwapProfile, needed by "swap to zram (madv-pageout)";
}

/// `[noise]`: the sources of run-to-run and CPU-to-CPU variation the engine models, each drawn
/// from its own seeded stream (docs/design.md#randomness).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseProfile {
    /// `CONFIG_HZ` of the kernel the machine's figures were taken with: the scheduler tick's rate
    /// on every busy CPU (`NO_HZ_IDLE`: idle CPUs take none).
    pub hz: Sourced,
    /// The tick's own work between interrupt entry and exit (`tick_sched_timer`:
    /// `update_process_times`, `scheduler_tick`, the hrtimer reprogram); entry and exit are the
    /// `[ipi]` handler's (the same `idtentry` path), or none on a uniprocessor.
    pub tick_cycles: Sourced,
    /// The cost of one step relative to its nominal cost, at the 1st, 5th, 10th, 25th, 50th,
    /// 75th, 90th, 95th and 99th percentiles: every step's time is scaled by a factor drawn from
    /// this distribution (linear between the percentiles, flat beyond the 1st and 99th).
    pub step_quantiles: SourcedQuantiles,
}

/// A measured distribution with its provenance: values at fixed percentiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcedQuantiles {
    pub value: Vec<f64>,
    pub source: String,
    pub confidence: Confidence,
}

/// The factors over the median a step's cost may take in [`NoiseProfile::step_quantiles`].
pub const STEP_FACTORS: std::ops::RangeInclusive<f64> = 0.1..=10.0;

/// The percentiles [`NoiseProfile::step_quantiles`] lists values at.
pub const STEP_PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// `[page_alloc]`: what the buddy allocator and the per-CPU lists cost per operation. The lock
/// word and the zone's own lines are simulated (hw/lock.rs, hw/coherence.rs); these are the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageAllocProfile {
    /// One allocation served from a per-CPU list: IRQs off, list pop, counters, `prep_new_page`
    /// checks (no zeroing).
    pub pcp_alloc_cycles: Sourced,
    /// One free onto a per-CPU list (`free_hot_cold_page` / `free_unref_page`).
    pub pcp_free_cycles: Sourced,
    /// A `zone->lock` section's fixed part beyond the lock-word RMW: irqsave/restore, unlock,
    /// zone statistics.
    pub zone_lock_section_cycles: Sourced,
    /// One block moved on or off a buddy free list with its counters (zone lines cache-hot).
    pub buddy_block_cycles: Sourced,
    /// Touching one `struct page` line this CPU does not hold (a free block, its buddy, a list
    /// neighbour): what dominates `zone->lock` hold times.
    pub struct_page_miss_ns: Sourced,
}

/// `[slab]`: SLUB's unit costs (linux/mm/slub.rs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlabProfile {
    /// `slab_alloc` fast path: a `this_cpu_cmpxchg_double` on the per-CPU freelist.
    pub alloc_fastpath_cycles: Sourced,
    /// `slab_free` fast path (object of the CPU's own active slab).
    pub free_fastpath_cycles: Sourced,
    /// `___slab_alloc` slow path beyond the page allocation: take the next slab (partial list or
    /// a new one), freeze it, load its freelist.
    pub alloc_slowpath_cycles: Sourced,
    /// `__slab_free` slow path: the `cmpxchg_double` on the slab page's freelist, beyond the
    /// line transfer the model charges from the slab's last user.
    pub free_slowpath_cycles: Sourced,
    /// `new_slab`: per object of a fresh slab (building the freelist).
    pub new_slab_object_cycles: Sourced,
}

/// `[ipc]`: what a pipe call costs besides the system-call entry and exit, the copy (by where
/// its bytes live, linux/lib/iov_iter.rs), `pipe->mutex` (simulated) and the page allocator (linux/fs/pipe.rs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpcProfile {
    /// `sys_write` -> `vfs_write` -> `pipe_write`: fd lookup, checks, the buffer bookkeeping,
    /// the wait-queue lock of the wake-up, `file_update_time`.
    pub pipe_write_cycles: Sourced,
    /// `sys_read` -> `vfs_read` -> `pipe_read`: likewise, with `file_accessed`.
    pub pipe_read_cycles: Sourced,
    /// `sys_write` -> `sock_write_iter` -> `unix_stream_sendmsg` for one skb, without entry/exit,
    /// SLUB, the copy and the peer's state lock: SCM credentials, wmem accounting, queueing, the
    /// wake-up.
    pub unix_send_cycles: Sourced,
    /// `sys_read` -> `sock_read_iter` -> `unix_stream_read_generic` for one skb, without SLUB,
    /// the copy and the state lock: `u->iolock`, SCM, `consume_skb`'s destructor, the write-space
    /// check.
    pub unix_recv_cycles: Sourced,
}

/// `[net]`: the protocol paths of a loopback send and receive, beyond what the model builds
/// from other figures (system-call entry and exit, SLUB and page-allocator calls, the payload
/// copies (linux/lib/iov_iter.rs), wake-ups and context switches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetProfile {
    /// `udp_sendmsg` through `ip_make_skb`, `ip_send_skb`, `loopback_xmit`, `netif_rx` and the
    /// NET_RX softirq's `ip_rcv` .. `udp_rcv` .. `__sock_queue_rcv_skb` on the sender's CPU.
    pub udp_send_cycles: Sourced,
    /// `udp_recvmsg`: `__skb_recv_datagram`, the checksum/copy setup, `skb_consume_udp`.
    pub udp_recv_cycles: Sourced,
    /// `tcp_sendmsg` with one segment through `tcp_transmit_skb` .. loopback .. `tcp_v4_rcv`
    /// (and the ACK it sends back) on the sender's CPU.
    pub tcp_send_cycles: Sourced,
    /// `tcp_recvmsg` for one skb, `tcp_cleanup_rbuf` and the window update.
    pub tcp_recv_cycles: Sourced,
    /// A `tcp_sendmsg` whose data Nagle holds: filling the write queue's tail and the push that
    /// `tcp_nagle_test` stops (linux/net/ipv4/tcp_output.rs); at most `tcp_send_cycles`, whose
    /// rest is the held tail's transmission when the ACK comes.
    pub tcp_append_cycles: Sourced,
    /// A pure ACK on loopback: the reader's `tcp_send_ack` through `__tcp_transmit_skb` ..
    /// `loopback_xmit`, and the NET_RX softirq's `ip_rcv` .. `tcp_v4_rcv` .. `tcp_ack` (with
    /// `tcp_clean_rtx_queue` freeing what it acknowledges) on the writer's socket, on one CPU.
    /// Absent (older profiles): an ACK costs nothing and holds no lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_ack_cycles: Option<Sourced>,
    /// The part of `tcp_ack_cycles` run under the writer's `sk_lock.slock`
    /// (`bh_lock_sock_nested` .. `tcp_v4_do_rcv` .. `bh_unlock_sock`; linux/net/core/sock.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_ack_locked_cycles: Option<Sourced>,
    /// The part of `tcp_send_cycles` that is the segment's loopback receive: the NET_RX
    /// softirq's `process_backlog` .. `ip_rcv` .. `tcp_v4_rcv` and its queueing, which runs after
    /// whatever queued the segment has finished (an ACK's `tcp_write_space` wake-up first;
    /// linux/net/ipv4/tcp_output.rs). Absent (older profiles): none of the send path is split
    /// off, and a segment an ACK releases is received before that wake-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_deliver_cycles: Option<Sourced>,
}

impl NetProfile {
    /// The keys' ranges, and the parts no larger than their wholes.
    pub(super) fn check(&self) -> Result<(), ProfileError> {
        for (key, v) in [
            ("net.udp_send_cycles", Some(&self.udp_send_cycles)),
            ("net.udp_recv_cycles", Some(&self.udp_recv_cycles)),
            ("net.tcp_send_cycles", Some(&self.tcp_send_cycles)),
            ("net.tcp_recv_cycles", Some(&self.tcp_recv_cycles)),
            ("net.tcp_append_cycles", Some(&self.tcp_append_cycles)),
            ("net.tcp_ack_cycles", self.tcp_ack_cycles.as_ref()),
            ("net.tcp_ack_locked_cycles", self.tcp_ack_locked_cycles.as_ref()),
            ("net.tcp_deliver_cycles", self.tcp_deliver_cycles.as_ref()),
        ] {
            if let Some(v) = v {
                check_sourced(key, v, 0.0, 1_000_000.0)?;
            }
        }
        if self.tcp_append_cycles.value > self.tcp_send_cycles.value {
            let (a, t) = (self.tcp_append_cycles.value, self.tcp_send_cycles.value);
            let why =
                format!("{a} exceeds net.tcp_send_cycles ({t}): a held send is part of a transmitted one");
            return Err(err("net.tcp_append_cycles", why));
        }
        if let Some(d) = &self.tcp_deliver_cycles {
            let left = self.tcp_send_cycles.value - self.tcp_append_cycles.value;
            if d.value > left {
                let why = format!(
                    "{} exceeds net.tcp_send_cycles less net.tcp_append_cycles ({left}): the receive is part \
                     of a transmission",
                    d.value
                );
                return Err(err("net.tcp_deliver_cycles", why));
            }
        }
        match (&self.tcp_ack_cycles, &self.tcp_ack_locked_cycles) {
            (Some(a), Some(l)) if l.value > a.value => Err(err(
                "net.tcp_ack_locked_cycles",
                format!(
                    "{} exceeds net.tcp_ack_cycles ({}): the locked part is part of the ACK",
                    l.value, a.value
                ),
            )),
            (None, Some(_)) => Err(err("net.tcp_ack_locked_cycles", "needs net.tcp_ack_cycles")),
            _ => Ok(()),
        }
    }
}

/// `[fs]`: the file-creation paths fsmark runs (linux/fs/namei.rs, linux/fs/ext4.rs), beyond what the
/// model builds from other figures (system-call entry and exit, SLUB and page-allocator calls,
/// the parent directory's `i_rwsem`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsProfile {
    /// `open(O_CREAT)` outside the parent's lock: `getname`'s copy, `path_openat` and the walk
    /// of the path's components, `do_dentry_open`, `fsnotify`, `fd_install`.
    pub open_walk_cycles: Sourced,
    /// The part under the parent's `i_rwsem`: the dcache miss, `ext4_lookup`'s htree probe,
    /// `ext4_create` (journal start/stop, `ext4_new_inode`, `ext4_add_entry`), `d_instantiate`;
    /// on tmpfs `simple_lookup` and `shmem_mknod` (a probed host profile's figure is tmpfs's:
    /// its source says so).
    pub create_locked_cycles: Sourced,
    /// `mkdir()` of a directory that exists: the walk outside the parent's lock.
    pub mkdir_walk_cycles: Sourced,
    /// ... and the dcache hit under it that returns `-EEXIST`.
    pub mkdir_lookup_cycles: Sourced,
    /// `write(fd, buf, 0)`: `vfs_write` down to `ext4_file_write_iter`'s early return.
    pub write_empty_cycles: Sourced,
    /// `close()`: `__close_fd`, `filp_close` and the deferred `__fput`.
    pub close_cycles: Sourced,
    /// fs_mark's own user-space work per file (`setup_file_name`, the timers).
    pub fsmark_user_cycles: Sourced,
    /// `write(fd, buf, 4096, ...)` of a whole page of a tmpfs file that is already cached,
    /// without entry/exit and the 4 KiB copy (`vfs_write` -> `shmem_file_write_iter` ->
    /// `generic_perform_write`: `shmem_write_begin`'s lookup, `shmem_write_end`'s dirtying,
    /// `i_size`, `file_update_time`; docs/references/linux-mm.md#tmpfs-write). Absent (older
    /// profiles): dd on an x86 machine is refused, naming the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmpfs_write_cycles: Option<Sourced>,
    /// A tmpfs write's new page besides the page allocator the model simulates:
    /// `shmem_alloc_and_add_folio`'s memory cgroup charge, `i_pages` insertion, LRU add and
    /// inode and mount block accounting (linux/mm/shmem.rs; docs/references/machine-costs.md#shmem-new-folio).
    /// Absent: the new page costs `kernel.page_alloc_cycles`, the anonymous page's estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shmem_alloc_and_add_folio_cycles: Option<Sourced>,
}

impl FsProfile {
    /// `(key, value)` for validation.
    pub fn fields(&self) -> Vec<(&'static str, &Sourced)> {
        let mut f = vec![
            ("fs.open_walk_cycles", &self.open_walk_cycles),
            ("fs.create_locked_cycles", &self.create_locked_cycles),
            ("fs.mkdir_walk_cycles", &self.mkdir_walk_cycles),
            ("fs.mkdir_lookup_cycles", &self.mkdir_lookup_cycles),
            ("fs.write_empty_cycles", &self.write_empty_cycles),
            ("fs.close_cycles", &self.close_cycles),
            ("fs.fsmark_user_cycles", &self.fsmark_user_cycles),
        ];
        f.extend(self.tmpfs_write_cycles.as_ref().map(|v| ("fs.tmpfs_write_cycles", v)));
        f.extend(
            self.shmem_alloc_and_add_folio_cycles
                .as_ref()
                .map(|v| ("fs.shmem_alloc_and_add_folio_cycles", v)),
        );
        f
    }
}

impl MachineProfile {
    /// `fs.tmpfs_write_cycles`, or an error naming the key (dd's tmpfs write needs it).
    pub fn tmpfs_write_cycles(&self) -> Result<&Sourced, ProfileError> {
        self.fs.as_ref().and_then(|f| f.tmpfs_write_cycles.as_ref()).ok_or_else(|| {
            let why = format!(
                "profile `{}` has no key fs.tmpfs_write_cycles (needed by dd's write to a tmpfs file; \
                 `tlblab probe --write-profile` measures it)",
                self.name
            );
            err("fs.tmpfs_write_cycles", why)
        })
    }
}

/// `[uncore]`: the socket's shared memory limits (hw/uncore.rs): the last-level cache's capacity
/// and the DRAM bandwidth of its memory controllers, both per socket. Absent: bulk transfers run at
/// their per-core rates however many CPUs copy at once (as the model ran before this section existed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UncoreProfile {
    /// Last-level cache per socket, MiB.
    pub llc_mib: Sourced,
    /// Peak DRAM bandwidth per socket: channels x transfer rate x 8 bytes, MB/s.
    pub dram_peak_mbps: Sourced,
    /// The fraction of the peak a STREAM-class run sustains with every core streaming.
    pub dram_sustained_fraction: Sourced,
}

/// `[swap]`: what a shmem page's trip to zram and back costs per page, beyond what is simulated
/// (its allocation and free, LRU and `lru_lock` work, rmap walks, TLB maintenance) or costed by
/// `[memory]` (the 4 KiB fill of a same-filled page is `clear_page_mbps`'s stream of stores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapProfile {
    /// `shrink_folio_list`'s `pageout` of a dirty shmem folio: `shmem_writepage` (swap slot from
    /// the per-CPU slot cache, `add_to_swap_cache`, the page-cache slot replaced by the swap
    /// entry) and `swap_writepage` to a synchronous block device (a bio submitted and waited
    /// for, zram's slot lock and table update, `folio_end_writeback`).
    pub swap_out_cycles: Sourced,
    /// `shmem_swapin_folio` besides the allocation, the LRU add and the read's fill: the swap
    /// cache lookup and insert, memcg's swap-in charge, `swap_readpage`'s bio to zram,
    /// `shmem_add_to_page_cache`, `delete_from_swap_cache`, `swap_free` and zram's slot free.
    pub swap_in_cycles: Sourced,
    /// zram's `page_same_filled`: the compare of a page's 512 words with its first.
    pub same_filled_scan_cycles: Sourced,
}

/// `[reclaim]`: what page reclaim and a page-cache fill cost per page, beyond what is simulated
/// (`lru_lock` and `zone->lock` waits, the pages' allocation and free, TLB flushes and IPIs,
/// `struct page` misses, zeroing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReclaimProfile {
    /// An `lru_lock` section's fixed part beyond the lock-word RMW: irq disable/enable, unlock,
    /// the zone's LRU statistics.
    pub lru_lock_section_cycles: Sourced,
    /// Moving one page on or off an LRU list inside `lru_lock` (list_del/list_add, flags,
    /// `get_page`/`put_page` of isolation), with its `struct page` line cached.
    pub lru_page_cycles: Sourced,
    /// `shrink_page_list` per page besides the rmap walks and `__remove_mapping`:
    /// `trylock_page`, the mapping and writeback checks, `unlock_page`, list moves.
    pub shrink_page_cycles: Sourced,
    /// One VMA of an rmap walk (`page_referenced_one` / `try_to_unmap_one`): `vma_address`,
    /// `page_check_address` down to the PTE with its page-table lock, the young-bit test or PTE
    /// clear, `page_remove_rmap` on unmap.
    pub rmap_vma_cycles: Sourced,
    /// `__remove_mapping` of a clean page-cache page: `tree_lock`, refcount freeze, the radix
    /// tree slot replaced by a shadow entry, memcg uncharge.
    pub remove_mapping_cycles: Sourced,
    /// One page of a read-around into the page cache of a sparse file, besides the allocation
    /// (simulated) and the zeroing (`memory.clear_page_mbps`): `__page_cache_alloc`'s memcg
    /// charge, `add_to_page_cache_lru` (radix insert under `tree_lock`), the filesystem's
    /// `readpages` mapping a hole (no I/O), `SetPageUptodate`, `unlock_page`.
    pub pagecache_fill_page_cycles: Sourced,
    /// The part of `remove_mapping_cycles` run under the mapping's `i_pages` lock
    /// (`xa_lock_irq` .. `xa_unlock_irq` of `__remove_mapping`; linux/mm/filemap.rs). Absent
    /// (older profiles): the mapping has no lock and the whole cost is plain work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_mapping_locked_cycles: Option<Sourced>,
    /// The part of `pagecache_fill_page_cycles` run under the mapping's `i_pages` lock
    /// (`__filemap_add_folio`'s `xas_lock_irq` .. `xas_unlock_irq`). Absent: as above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pagecache_add_locked_cycles: Option<Sourced>,
}

impl ReclaimProfile {
    /// The keys' ranges, and the locked parts no larger than their wholes.
    pub(super) fn check(&self) -> Result<(), ProfileError> {
        for (key, v) in [
            ("reclaim.lru_lock_section_cycles", &self.lru_lock_section_cycles),
            ("reclaim.lru_page_cycles", &self.lru_page_cycles),
            ("reclaim.shrink_page_cycles", &self.shrink_page_cycles),
            ("reclaim.rmap_vma_cycles", &self.rmap_vma_cycles),
            ("reclaim.remove_mapping_cycles", &self.remove_mapping_cycles),
            ("reclaim.pagecache_fill_page_cycles", &self.pagecache_fill_page_cycles),
        ] {
            check_sourced(key, v, 0.0, 100_000.0)?;
        }
        for (key, part, whole, wkey) in [
            (
                "reclaim.remove_mapping_locked_cycles",
                &self.remove_mapping_locked_cycles,
                &self.remove_mapping_cycles,
                "reclaim.remove_mapping_cycles",
            ),
            (
                "reclaim.pagecache_add_locked_cycles",
                &self.pagecache_add_locked_cycles,
                &self.pagecache_fill_page_cycles,
                "reclaim.pagecache_fill_page_cycles",
            ),
        ] {
            let Some(part) = part else { continue };
            check_sourced(key, part, 0.0, 100_000.0)?;
            if part.value > whole.value {
                let why =
                    format!("{} exceeds {wkey} ({}): the locked part is part of it", part.value, whole.value);
                return Err(err(key, why));
            }
        }
        Ok(())
    }
}

/// One-way cache-line transfer latencies between CPUs (half a CAS ping-pong round trip).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coherence {
    pub smt_sibling_ns: Sourced,
    pub same_socket_ns: Sourced,
    pub cross_socket_ns: Sourced,
    /// How long a socket's caching agent holds a read of a shared line that it serves, during
    /// which the next request to that line waits (hw/coherence.rs; absent: no such wait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_ns: Option<Sourced>,
}
