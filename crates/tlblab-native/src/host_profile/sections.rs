//! The sections the probe measures from user space beside the TLB and the caches: `[ipc]` (pipe
//! and socket-pair calls), `[net]` (loopback sends and receives), `[uncore]` (the LLC's size and
//! the memory bandwidth). Each from a micro-measurement of its own, never the benchmark it is
//! compared with.

use tlblab_model::profile::{FsProfile, IpcProfile, NetProfile, Sourced, UncoreProfile};

use super::{estimate, measured};
use crate::probe::ProbeReport;

/// `[ipc]` from the probe's pipe and socket-pair calls (crate::probe::ipc): each call's time less
/// the system call and the copy, which the model adds itself. `None` (the section is then
/// borrowed and labelled by whoever needs it) for a report without them, or where a call does
/// not stand above the system call's cost.
pub(super) fn ipc_section(r: &ProbeReport, tag: &str, warnings: &mut Vec<String>) -> Option<IpcProfile> {
    let calls = r.raw.ipc.as_ref()?;
    let mut key = |what: &str, s: &crate::stats::Summary, left_in: &str| {
        let m = Micro { section: "[ipc]", bytes: crate::probe::ipc::MSG, on: "", aside: "" };
        m.key(r, tag, what, s, left_in, warnings)
    };
    let pipe_left = "the page allocated every 40 writes and pipe->mutex's lock word, which the model also \
                     charges, are left in (a few cycles a call)";
    let unix_left =
        "the SLUB allocation (send) or free (receive) of the skb and its kmalloc head is left in \
                     (the probe measures no [slab]), so the model counts it twice";
    Some(IpcProfile {
        pipe_write_cycles: key("pipe write", &calls.pipe_write_ns, pipe_left)?,
        pipe_read_cycles: key("pipe read", &calls.pipe_read_ns, pipe_left)?,
        unix_send_cycles: key("AF_UNIX stream send", &calls.unix_send_ns, unix_left)?,
        unix_recv_cycles: key("AF_UNIX stream recv", &calls.unix_recv_ns, unix_left)?,
    })
}

/// `[net]` from the probe's loopback UDP and TCP calls (crate::probe::net), derived as `[ipc]`:
/// each call's time less the system call and the copy, which the model adds itself. `None` (the
/// section is then borrowed and labelled by whoever needs it) for a report without them, or
/// where a call does not stand above the system call's cost.
pub(super) fn net_section(r: &ProbeReport, tag: &str, warnings: &mut Vec<String>) -> Option<NetProfile> {
    let calls = r.raw.net.as_ref()?;
    let Some(cork) = calls.tcp_cork_send_ns.as_ref() else {
        warnings.push(
            "[net]: the report has no corked TCP send (older probe): the section is left to a stand-in"
                .into(),
        );
        return None;
    };
    let (tcp_ack_cycles, tcp_ack_locked_cycles) = tcp_ack(r, tag, warnings).unzip();
    let mut key = |what: &str, s: &crate::stats::Summary, path: &str| {
        let m = Micro {
            section: "[net]",
            bytes: crate::probe::net::MSG,
            on: " on 127.0.0.1",
            aside: "; never netperf or sockperf",
        };
        let tail = format!(
            "{path}; the skb's SLUB calls are left in (the probe measures no [slab]), so the model counts \
             them twice"
        );
        m.key(r, tag, what, s, &tail, warnings)
    };
    let tcp_deliver_cycles = Some(tcp_deliver(r, calls.tcp_send_ns.median));
    Some(NetProfile {
        tcp_ack_cycles,
        tcp_ack_locked_cycles,
        tcp_deliver_cycles,
        udp_send_cycles: key(
            "udp sendto",
            &calls.udp_send_ns,
            "udp_sendmsg through loopback_xmit and the NET_RX softirq's udp_rcv on the same CPU",
        )?,
        udp_recv_cycles: key("udp recv", &calls.udp_recv_ns, "udp_recvmsg of one queued datagram")?,
        tcp_send_cycles: key(
            "tcp send (TCP_NODELAY)",
            &calls.tcp_send_ns,
            "tcp_sendmsg of one segment through loopback and tcp_v4_rcv on the same CPU (the \
             burst fits the window: the receiver ACKs almost none of it)",
        )?,
        tcp_recv_cycles: key(
            "tcp recv",
            &calls.tcp_recv_ns,
            "tcp_recvmsg of one queued segment with tcp_cleanup_rbuf",
        )?,
        tcp_append_cycles: key(
            "tcp send (TCP_CORK)",
            cork,
            "tcp_sendmsg appending to the unsent tail and tcp_push stopped by tcp_nagle_test, as a send \
             Nagle holds; the burst's one skb allocation is spread over its sends",
        )?,
    })
    .map(|mut n| {
        // The receive is part of the transmission: never more than the send less its append.
        let left = n.tcp_send_cycles.value - n.tcp_append_cycles.value;
        if n.tcp_deliver_cycles.as_ref().is_some_and(|d| d.value > left) {
            warnings.push(format!(
                "[net]: the segment's receive ({TCP_DELIVER_SHARE} of the send call) came out above the send \
                 less its append ({left:.0} cycles): net.tcp_deliver_cycles is left out"
            ));
            n.tcp_deliver_cycles = None;
        }
        n
    })
    .filter(|n| {
        let ok = n.tcp_append_cycles.value <= n.tcp_send_cycles.value;
        if !ok {
            warnings.push(format!(
                "[net]: a corked TCP send ({} cycles) came out above a transmitted one ({}): the section is \
                 left to a stand-in",
                n.tcp_append_cycles.value, n.tcp_send_cycles.value
            ));
        }
        ok
    })
}

/// The share of a pure loopback ACK's path run under the writer's `sk_lock.slock`
/// (`tcp_v4_do_rcv` in `tcp_v4_rcv`), of its whole (the reader's `tcp_send_ack`, the softirq to
/// the lock, the locked part): 3518 of 9140 samples of `perf record -g` over the probe's
/// `tcp_acked` pattern on the Intel Xeon guest, Linux 6.18.44
/// (docs/references/machine-costs.md#tcp-ack-path). User space cannot time the part alone.
pub const TCP_ACK_LOCKED_SHARE: f64 = 0.385;

/// The share of a `TCP_NODELAY` loopback send's time (the whole call) spent receiving its
/// segment in the NET_RX softirq on the same CPU (`net_rx_action` .. `process_backlog` ..
/// `ip_rcv` .. `tcp_v4_rcv` and the queueing): 0.325-0.382 over four `perf record -g` runs of the
/// probe's burst pattern on the AMD EPYC guest, Linux 6.18.44
/// (docs/references/machine-costs.md#tcp-deliver-path). User space cannot time the part alone.
pub const TCP_DELIVER_SHARE: f64 = 0.34;

/// `net.tcp_deliver_cycles`: [`TCP_DELIVER_SHARE`] of the probe's measured send call (`send_ns`).
fn tcp_deliver(r: &ProbeReport, send_ns: f64) -> Sourced {
    let mhz = r.clock.mhz;
    let cycles = (TCP_DELIVER_SHARE * send_ns * mhz / 1e3).round();
    estimate(
        cycles,
        format!(
            "{TCP_DELIVER_SHARE} of the probe's TCP_NODELAY send call ({send_ns:.0} ns) x {mhz:.0} MHz: the share \
             of that call spent receiving its segment in the NET_RX softirq (net_rx_action .. tcp_v4_rcv), in \
             perf record -g runs of the same pattern on the AMD EPYC guest, Linux 6.18.44 \
             (docs/references/machine-costs.md#tcp-deliver-path)"
        ),
    )
}

/// `net.tcp_ack_cycles` and `net.tcp_ack_locked_cycles` from the probe's `tcp_acked` pairs: a
/// pair less the burst pattern's send and read (which ACK 0.06 a message: left in, the ACK
/// comes out that much short), the locked part [`TCP_ACK_LOCKED_SHARE`] of it. `None` for a
/// report without the pairs or where the difference does not stand above
/// [`crate::probe::ipc::FLOOR_CYCLES`].
fn tcp_ack(r: &ProbeReport, tag: &str, warnings: &mut Vec<String>) -> Option<(Sourced, Sourced)> {
    let calls = r.raw.net.as_ref()?;
    let pair = calls.tcp_acked_ns.as_ref()?;
    let mhz = r.clock.mhz;
    let (send, recv) = (calls.tcp_send_ns.median, calls.tcp_recv_ns.median);
    let cycles = (pair.median - send - recv) * mhz / 1e3;
    if cycles < crate::probe::ipc::FLOOR_CYCLES {
        warnings.push(format!(
            "[net]: a pure ACK came out at {cycles:.0} cycles (a send and its read {:.0} ns, less \
                        {send:.0} and {recv:.0} ns): net.tcp_ack_cycles is left out",
            pair.median
        ));
        return None;
    }
    let how = format!(
        "{tag}: micro-measurement of a TCP_NODELAY send of {} bytes on 127.0.0.1 and at once the \
                read of it, whose tcp_cleanup_rbuf ACKs it (one ACK a pair), {:.0} ns a pair (median over \
                bursts, {}), less the burst pattern's send ({send:.0} ns) and read ({recv:.0} ns), x \
                {mhz:.0} MHz: the pure ACK's tcp_send_ack through loopback and tcp_v4_rcv .. tcp_ack \
                freeing the acknowledged skb on the writer's socket, on one CPU; never netperf or \
                sockperf",
        crate::probe::net::MSG,
        pair.median,
        pair.spread_text(0, " ns")
    );
    let locked = estimate(
        (cycles * TCP_ACK_LOCKED_SHARE).round(),
        format!(
            "{TCP_ACK_LOCKED_SHARE} of net.tcp_ack_cycles ({cycles:.0}): the share of the ACK's \
                        path under the writer's sk_lock.slock (tcp_v4_do_rcv) in a perf record -g of the same \
                        pattern on the Intel Xeon guest, Linux 6.18.44 \
                        (docs/references/machine-costs.md#tcp-ack-path)"
        ),
    );
    Some((measured(cycles.round(), how), locked))
}

/// The built-in x86 profiles' `mkdir_lookup_cycles`: the dcache hit under the parent's lock
/// cannot be timed apart from `mkdir`'s walk from user space.
pub const MKDIR_LOOKUP_CYCLES: f64 = 400.0;

/// `[fs]` from the probe's file-creation calls on tmpfs (crate::probe::fs): each call less the
/// system call, which the model adds itself; the create's locked part is the create less an
/// `open(O_RDWR)` of a file that exists (the same walk, `do_dentry_open` and `fd_install`, no
/// lock, no inode), which is `open_walk_cycles`; fs_mark's user
/// work is its own micro-measurement. `None` (the section is then borrowed and labelled by
/// whoever needs it) for a report without the calls, or where a difference does not stand
/// above [`crate::probe::ipc::FLOOR_CYCLES`].
pub(super) fn fs_section(r: &ProbeReport, tag: &str, warnings: &mut Vec<String>) -> Option<FsProfile> {
    let c = r.raw.fs.as_ref()?;
    let (mhz, sys) = (r.clock.mhz, r.raw.syscall_ns.median);
    let floor = crate::probe::ipc::FLOOR_CYCLES;
    let files = format!(
        "on tmpfs (a directory under {}, {} files in it at the end: nothing unlinked between bursts, as \
         fs_mark's subdirectory grows)",
        c.mount, c.files
    );
    let left_in = "the SLUB calls (names_cache, filp, dentry, its external name, shmem_inode_cache, maple \
                   nodes) are left in (the probe measures no [slab]), so the model counts them twice";
    let call = |s: &crate::stats::Summary| format!("{:.0} ns a call ({})", s.median, s.spread_text(0, " ns"));
    let mut key = |what: &str, cycles: f64, how: String| -> Option<Sourced> {
        if cycles < floor {
            warnings.push(format!(
                "[fs]: `{what}` came out at {cycles:.0} cycles, below {floor:.0}: the section is left to \
                 a stand-in"
            ));
            return None;
        }
        let src = format!("{tag}: micro-measurement {how}, x {mhz:.0} MHz; never fs_mark");
        Some(measured(cycles.round(), src))
    };
    let cyc = |ns: f64| ns * mhz / 1e3;
    let burst = crate::probe::fs::BURST;
    let walk = key(
        "open(O_RDWR) of an existing file",
        cyc(c.open_existing_ns.median - sys),
        format!(
            "`open(FILE, O_RDWR)` of each file just created {files}, bursts of {burst}: the create's work \
             outside the parent's lock (getname, the walk and the dcache hit, do_dentry_open, fd_install), \
             {}, less syscall_ns ({sys:.0} ns); of it the walk alone, an O_CREAT open of an existing \
             directory to -EISDIR without the lock (v6.12+), is {:.0} ns",
            call(&c.open_existing_ns),
            c.walk_ns.median
        ),
    )?;
    let create_locked = key(
        "open(O_CREAT) of a new name less the open of an existing one",
        cyc(c.create_ns.median - c.open_existing_ns.median),
        format!(
            "`open(NEW, O_CREAT | O_RDWR | O_TRUNC)` of a new 40-byte name {files}, bursts of {burst}, \
             {}, less the open of an existing file ({:.0} ns): the parent's i_rwsem section \
             (d_alloc_parallel, simple_lookup, shmem_mknod, simple_offset_add); {left_in}",
            call(&c.create_ns),
            c.open_existing_ns.median
        ),
    )?;
    let mkdir_all = cyc(c.mkdir_exists_ns.median - sys);
    let mkdir_walk = key(
        "mkdir of an existing directory",
        mkdir_all - MKDIR_LOOKUP_CYCLES,
        format!(
            "`mkdir(DIR)` of the existing subdirectory {files}, bursts of {burst}, -EEXIST, {}, less \
             syscall_ns ({sys:.0} ns) and mkdir_lookup_cycles ({MKDIR_LOOKUP_CYCLES:.0}, the estimate)",
            call(&c.mkdir_exists_ns)
        ),
    )?;
    let write_empty = key(
        "write(fd, buf, 0)",
        cyc(c.write_empty_ns.median - sys),
        format!(
            "`write(fd, buf, 0)` on a new tmpfs file, bursts of {burst}, {}, less syscall_ns",
            call(&c.write_empty_ns)
        ),
    )?;
    let close = key(
        "close",
        cyc(c.close_ns.median - sys),
        format!(
            "`close(fd)` of a new tmpfs file, bursts of {burst}, {}, less syscall_ns (__fput runs on the \
             way out); the filp free is left in",
            call(&c.close_ns)
        ),
    )?;
    let user = key(
        "fs_mark's user work",
        cyc(c.user_ns.median),
        format!(
            "a native re-creation of fs_mark 3.3's per-file user code (setup_file_name: gettimeofday, the \
             subdirectory and path sprintfs, 24 random() name characters, strncat; do_run's two path \
             sprintfs and three start/stop gettimeofday pairs) into a fresh calloc'd array of its \
             2128-byte name entries, the pages' first-touch faults included as in fs_mark, {} a file{}",
            call(&c.user_ns),
            c.user_touched_ns.as_ref().map_or(String::new(), |t| format!(
                " ({:.0} ns over an array touched first: the first touches are {:.0} ns a file)",
                t.median,
                c.user_ns.median - t.median
            ))
        ),
    )?;
    Some(FsProfile {
        open_walk_cycles: walk,
        create_locked_cycles: create_locked,
        mkdir_walk_cycles: mkdir_walk,
        mkdir_lookup_cycles: estimate(
            MKDIR_LOOKUP_CYCLES,
            format!(
                "{tag}: not measurable from user space (the dcache hit under the parent's lock is one \
                 part of mkdir's -EEXIST): the built-in x86 profiles' estimate, borrowed; \
                 mkdir_walk_cycles is the measured call less it"
            ),
        ),
        write_empty_cycles: write_empty,
        close_cycles: close,
        fsmark_user_cycles: user,
        tmpfs_write_cycles: tmpfs_write(r, tag, warnings),
        shmem_alloc_and_add_folio_cycles: None,
    })
}

/// What the model's simulated page allocator charges each fresh order-0 page, from the
/// profile's own `[page_alloc]` figures: `pcp_alloc_cycles` on every allocation, and the
/// refill's share, one buddy list move and one `struct page` line a page (the `zone->lock`
/// section, one a batch of 63 and more, is under a cycle a page and stays in).
pub(super) struct AllocShare {
    pub(super) pcp_alloc_cycles: f64,
    pub(super) buddy_block_cycles: f64,
    pub(super) struct_page_ns: f64,
}

/// `fs.shmem_alloc_and_add_folio_cycles` from the probe's `fallocate` of a tmpfs hole against a
/// written page (crate::probe::shmem): the difference per call (the entry and `shmem_fallocate`'s
/// fixed part cancel) less what the model's allocator charges the page itself ([`AllocShare`]).
/// Nothing of the page's content is in it (an fallocated folio is not cleared), so the model's
/// clear or copy and a guest's first touch are not counted twice. `None` for a report without
/// the measurement, or below the floor.
pub(super) fn shmem_new_folio(
    r: &ProbeReport,
    tag: &str,
    alloc: &AllocShare,
    warnings: &mut Vec<String>,
) -> Option<Sourced> {
    let n = r.raw.shmem_new_folio.as_ref()?;
    let mhz = r.clock.mhz;
    let share = alloc.pcp_alloc_cycles + alloc.buddy_block_cycles + alloc.struct_page_ns * mhz / 1e3;
    let cycles = n.extra_ns.median * mhz / 1e3 - share;
    let floor = crate::probe::ipc::FLOOR_CYCLES;
    if cycles < floor {
        warnings.push(format!(
            "[fs]: a tmpfs file's new page came out at {cycles:.0} cycles, below {floor:.0}: \
             fs.shmem_alloc_and_add_folio_cycles is left out"
        ));
        return None;
    }
    let src = format!(
        "{tag}: micro-measurement `fallocate(fd, 0, off, 4096)` of a hole of a tmpfs file ({}) against the \
         same call over a page written before (the lookup alone), {} calls each a block: {:.0} ns against \
         {:.0} ns a call, the difference {:.0} ns ({}); x {mhz:.0} MHz less what the model's page allocator \
         charges the page itself ({share:.0} cycles: page_alloc.pcp_alloc_cycles {:.0}, buddy_block_cycles \
         {:.0}, one struct page line at page_alloc.struct_page_miss_ns {:.1} ns); the fallocated page is \
         not cleared, so memory.clear_* and second_level_fault_ns are not in it; never dd",
        n.mount,
        n.pages,
        n.new_ns.median,
        n.cached_ns.median,
        n.extra_ns.median,
        n.extra_ns.spread_text(0, " ns"),
        alloc.pcp_alloc_cycles,
        alloc.buddy_block_cycles,
        alloc.struct_page_ns
    );
    Some(measured(cycles.round(), src))
}

/// `fs.tmpfs_write_cycles` from the probe's `pwrite` of a cached tmpfs page: the call less
/// `syscall_ns` and the 4 KiB copy as the model charges it (linux/lib/iov_iter.rs: in cache, at
/// `memory.clear_page_mbps`). `None` for a report without the measurement, or below the floor.
fn tmpfs_write(r: &ProbeReport, tag: &str, warnings: &mut Vec<String>) -> Option<Sourced> {
    let p = r.raw.fs.as_ref()?.pwrite_page_ns.as_ref()?;
    let (mhz, sys) = (r.clock.mhz, r.raw.syscall_ns.median);
    let bytes = crate::probe::fs::PWRITE_BYTES as f64;
    let copy_ns = bytes * 1000.0 / r.raw.clear_page_mbps.median;
    let cycles = (p.median - sys - copy_ns) * mhz / 1e3;
    let floor = crate::probe::ipc::FLOOR_CYCLES;
    if cycles < floor {
        warnings.push(format!(
            "[fs]: `pwrite of a cached tmpfs page` came out at {cycles:.0} cycles, below {floor:.0}: \
             fs.tmpfs_write_cycles is left out"
        ));
        return None;
    }
    let src = format!(
        "{tag}: micro-measurement `pwrite(fd, buf, 4096, 0)` over the first page of a tmpfs file that \
         page is cached in (no allocation), bursts of {}, {:.0} ns a call ({}), less syscall_ns ({sys:.0} \
         ns) and the 4 KiB copy at memory.clear_page_mbps ({copy_ns:.0} ns), x {mhz:.0} MHz; never dd",
        crate::probe::fs::BURST,
        p.median,
        p.spread_text(0, " ns")
    );
    Some(measured(cycles.round(), src))
}

/// `[uncore]` from the probe's sysfs LLC size and its STREAM-like copy (crate::probe::uncore).
/// The copy with every CPU at once is the sustained rate this guest's memory gives its CPUs:
/// the peak is taken as that rate (in bus bytes, reads plus writes, as hw/uncore.rs counts
/// them) with a sustained fraction of 1, each labelled. A capacity: other tenants only lower
/// a repetition's rate (a descheduled copy thread makes the round's slowest), so the best
/// repetition is taken, and never below what one CPU alone copied. `None` without the
/// measurement or an LLC size.
pub(super) fn uncore_section(r: &ProbeReport, tag: &str) -> Option<UncoreProfile> {
    use crate::probe::uncore::TRAFFIC_PER_BYTE;
    let s = r.raw.stream.as_ref()?;
    let llc = s.llc_bytes?;
    Some(UncoreProfile {
        llc_mib: measured(
            llc as f64 / f64::from(1u32 << 20),
            format!("{tag}: the largest data or unified cache of CPU 0 in /sys/devices/system/cpu/cpu0/cache"),
        ),
        dram_peak_mbps: measured(
            (TRAFFIC_PER_BYTE * s.all_cpus_mbps.max.max(s.one_cpu_mbps.max)).round(),
            format!(
                "{tag}: STREAM-copy-like loop (memcpy between two buffers of {} MiB per CPU, past the LLC) on \
                 all {} CPUs at once: the best repetition, {:.0} MB/s copied ({}; one CPU alone {}, the floor), \
                 x {TRAFFIC_PER_BYTE} bus bytes per byte (a read and a non-temporal write); other tenants only \
                 lower a repetition, so the best is the capacity; the sustained rate itself, not the DIMMs' \
                 peak, which a guest cannot see",
                crate::probe::uncore::per_cpu_bytes(s.buffer_bytes, s.cpus) >> 20,
                s.cpus,
                s.all_cpus_mbps.max.max(s.one_cpu_mbps.max),
                s.all_cpus_mbps.spread_text(0, " MB/s"),
                s.one_cpu_mbps.spread_text(0, " MB/s"),
            ),
        ),
        dram_sustained_fraction: measured(
            1.0,
            format!("{tag}: 1, because dram_peak_mbps is already the measured sustained all-CPU rate"),
        ),
    })
}

/// One micro-measured call of a section: what it sends, where, and what its source string says
/// beside the figures.
struct Micro {
    section: &'static str,
    bytes: usize,
    on: &'static str,
    aside: &'static str,
}

impl Micro {
    /// The call's median time less the system call and the copy (which the model adds itself),
    /// in cycles, with its source; `None`, and a warning, where it does not stand above them.
    fn key(
        &self,
        r: &ProbeReport,
        tag: &str,
        what: &str,
        s: &crate::stats::Summary,
        tail: &str,
        warnings: &mut Vec<String>,
    ) -> Option<Sourced> {
        let (mhz, sys) = (r.clock.mhz, r.raw.syscall_ns.median);
        let copy = tlblab_model::linux::lib::iov_iter::CopyRate::new(
            r.raw.clear_page_mbps.median,
            r.raw.memcpy_mbps.median,
        );
        let Some(c) = crate::probe::ipc::path_cycles_of(self.bytes, s.median, mhz, sys, copy) else {
            warnings.push(format!(
                "{}: `{what}` took {:.0} ns, not above the system call ({sys:.0} ns) and the copy: the \
                 section is left to a stand-in",
                self.section, s.median
            ));
            return None;
        };
        Some(measured(
            c.round(),
            format!(
                "{tag}: micro-measurement `{what}` of {} bytes{} with nobody waiting (no sleep, wake-up or \
                 switch{}), {:.0} ns a call (median over bursts, {}), less syscall_ns ({sys:.0} ns) and the \
                 copy as the model charges it (linux/lib/iov_iter.rs), x {mhz:.0} MHz; {tail}",
                self.bytes,
                self.on,
                self.aside,
                s.median,
                s.spread_text(0, " ns")
            ),
        ))
    }
}

/// `kernel.context_switch_ns`: the probe's switch between two threads on one CPU over a socket
/// pair, less what the model charges apart on the same path (the AF_UNIX write that wakes the
/// other thread and the read that finds its byte, each a system call, measured alone with nobody
/// waiting; the local wake-up, `kernel.ttwu_local_cycles`): the switch itself, `schedule()` and
/// `switch_to`, which the key stands for. Where those are not measured, or the rest is not
/// positive, the whole time, and a warning says so.
pub(super) fn context_switch(r: &ProbeReport, tag: &str, warnings: &mut Vec<String>) -> Sourced {
    let cs = &r.raw.context_switch_ns;
    let whole = format!(
        "{tag}: two threads pinned to one CPU passing a byte over a socket pair, per switch (the blocking \
         read, the write that wakes the other thread, schedule()), median over blocks, {}",
        cs.spread_text(2, "")
    );
    let apart = r
        .raw
        .ipc
        .as_ref()
        .zip(r.raw.ttwu_local_ns.as_ref())
        .map(|(c, w)| (c.unix_send_ns.median, c.unix_recv_ns.median, w.median));
    match apart {
        Some((send, recv, wake)) if cs.median - send - recv - wake > 0.0 => {
            let rest = cs.median - send - recv - wake;
            measured(
                rest,
                format!(
                    "{whole}; less what the model charges apart on that path: the AF_UNIX send ({send:.0} ns) \
                     and receive ({recv:.0} ns) measured alone, system calls included (100-byte calls: their \
                     copies, some 10 ns, stay in), and the local wake-up ({wake:.0} ns, ttwu_local_cycles) \
                     = {rest:.0} ns"
                ),
            )
        }
        other => {
            warnings.push(format!(
                "kernel.context_switch_ns: {}: the whole switch loop ({:.0} ns) stands, its write, read and wake-up \
                 counted again where the model charges them",
                if other.is_some() {
                    "the write, read and wake-up measured alone take longer than the switch loop"
                } else {
                    "no AF_UNIX calls or local wake-up measured"
                },
                cs.median
            ));
            measured(cs.median, whole)
        }
    }
}

/// `kernel.ttwu_cycles` from the probe's wake-up across CPUs (crate::probe::sched): the waker's
/// time, in cycles at the profile's clock. The model charges it on the waker of every task a pipe,
/// a socket or a lock wakes (linux/kernel/sched/core.rs `try_to_wake_up`).
pub(super) fn ttwu(w: &crate::stats::Summary, mhz: f64, tag: &str) -> Sourced {
    measured(
        w.median * mhz / 1000.0,
        format!(
            "{tag}: futex wake of a thread asleep on another CPU, its CPU idle (20 us of spinning first), \
             less a futex wake of nobody: the unlink, try_to_wake_up and the interrupt to the idle CPU, \
             {:.0} ns at {mhz:.0} MHz (per run the median of its wake-ups; runs min {:.0} / median {:.0} / \
             max {:.0} ns, n = {})",
            w.median, w.min, w.median, w.max, w.n
        ),
    )
}

/// `kernel.ttwu_local_cycles` from the probe's wake-up on the waker's own CPU
/// (crate::probe::sched::local_wake_ns): the same path with no interrupt, charged where a task
/// wakes on its waker's CPU.
pub(super) fn ttwu_local(w: &crate::stats::Summary, mhz: f64, tag: &str) -> Sourced {
    measured(
        w.median * mhz / 1000.0,
        format!(
            "{tag}: futex wake of a SCHED_BATCH thread asleep on the waker's own CPU (both pinned there; a batch \
             task never preempts on wake-up), less a futex wake of nobody: the unlink and try_to_wake_up's \
             local enqueue, no interrupt, {:.0} ns at {mhz:.0} MHz (per run the median of its wake-ups; runs \
             min {:.0} / median {:.0} / max {:.0} ns, n = {})",
            w.median, w.min, w.median, w.max, w.n
        ),
    )
}

/// `kernel.idle_exit_ns` from the same wake-up's latency (crate::probe::sched): the time until
/// the woken thread has run, less what the model already puts on that path (the waker's
/// `try_to_wake_up`, the IPI's send and delivery, the context switch into the task). The rest is
/// the idle CPU's way out of idle (on a guest without polling idle: the halted vCPU's exit and
/// the injection of its interrupt), which the model adds to a wake-up of an idle CPU
/// (linux/kernel/sched/core.rs `wake`). None without the wake-up or the IPI measured.
pub(super) fn idle_exit(
    r: &ProbeReport,
    send_delivery_ns: Option<f64>,
    cs: f64,
    tag: &str,
) -> Option<Sourced> {
    let (lat, waker) = (r.raw.wake_latency_ns.as_ref()?, r.raw.ttwu_ns.as_ref()?);
    let ipi = send_delivery_ns?;
    let rest = lat.median - waker.median - ipi - cs;
    Some(measured(
        rest.max(0.0),
        format!(
            "{tag}: futex wake of a thread asleep on another CPU, its CPU idle (20 us of spinning first): the time \
             until the woken thread's store is seen, {:.0} ns (runs min {:.0} / max {:.0}, n = {}), less the \
             waker's wake-up {:.0} ns, the IPI's send and delivery {ipi:.0} ns and a context switch {cs:.0} ns \
             = {rest:.0} ns{}",
            lat.median,
            lat.min,
            lat.max,
            lat.n,
            waker.median,
            if rest < 0.0 { " (below zero: none)" } else { "" }
        ),
    ))
}

/// `kernel.fault_around_page_cycles` from the shmem read faults ([`crate::probe::filemap`]):
/// a fault that maps a whole 16-page window less one that maps a single page, over 15.
pub(super) fn fault_around(r: &ProbeReport, mhz: f64, tag: &str) -> Option<Sourced> {
    let f = r.raw.fault_around.as_ref()?;
    let ns = f.per_page_ns();
    Some(measured(
        ns * mhz / 1000.0,
        format!(
            "{tag}: read faults of a shared shmem mapping (memfd), one per 16-page window after MADV_DONTNEED: \
             every page of the file cached, so fault-around maps 16 pages ({:.0} ns, blocks min {:.0} / max \
             {:.0}), against a file whose only cached page in each window is the faulting one ({:.0} ns, blocks \
             min {:.0} / max {:.0}); the difference over 15 = {ns:.1} ns x {mhz:.0} MHz",
            f.dense_ns.median, f.dense_ns.min, f.dense_ns.max, f.sparse_ns.median, f.sparse_ns.min, f.sparse_ns.max
        ),
    ))
}
