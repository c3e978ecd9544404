//! Page fault + zeroing and unmap + free costs per page, with 1 and 2 threads of one mm (each
//! faulting its own region): what `page_fault1` pays per iteration, and what contention on the
//! mm and the allocator adds. Also the user-level unit costs the kernel paths are built from:
//! a null system call, clearing a cache-resident page, and a DRAM-to-DRAM copy.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use crate::interrupts::IpiCounter;
use crate::stats::Summary;
use crate::sys::{self, Advice, Backing, Mapping, PAGE};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultPoint {
    pub threads: usize,
    /// Per page, per thread: first write (fault, allocation, zeroing, PTE install).
    pub fault_ns: Summary,
    /// Per page: munmap of the whole region (zap, TLB flush, free).
    pub unmap_ns: Summary,
    /// `TLB` interrupts per munmap.
    pub ipis_per_unmap: Option<f64>,
}

/// `threads` threads on `cpus` each fault `pages` pages of their own mapping, then unmap it.
pub fn fault_point(cpus: &[usize], threads: usize, pages: usize, runs: usize) -> std::io::Result<FaultPoint> {
    let (mut fault, mut unmap, mut ipis) = (Vec::new(), Vec::new(), 0u64);
    let mut have_ipis = true;
    for _ in 0..runs {
        let barrier = Arc::new(Barrier::new(threads));
        let counter = IpiCounter::start();
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (cpu, barrier) = (cpus[i % cpus.len()], barrier.clone());
                std::thread::spawn(move || -> std::io::Result<(f64, f64)> {
                    sys::pin_to_cpu(cpu)?;
                    let m = Mapping::new(pages * PAGE, Backing::Anon)?;
                    m.madvise(0, m.len(), Advice::NoHugePage)?;
                    barrier.wait();
                    let t = Instant::now();
                    for p in 0..pages {
                        m.write_byte(p * PAGE, 1);
                    }
                    let f = t.elapsed().as_nanos() as f64 / pages as f64;
                    // Both threads unmap at once, as page_fault1's tasks do at the end of a pass.
                    barrier.wait();
                    let t = Instant::now();
                    drop(m);
                    Ok((f, t.elapsed().as_nanos() as f64 / pages as f64))
                })
            })
            .collect();
        for h in handles {
            let (f, u) = h.join().expect("fault probe thread panicked")?;
            fault.push(f);
            unmap.push(u);
        }
        match counter.stop().tlb {
            Some(n) => ipis += n,
            None => have_ipis = false,
        }
    }
    Ok(FaultPoint {
        threads,
        fault_ns: Summary::of(&fault),
        unmap_ns: Summary::of(&unmap),
        ipis_per_unmap: have_ipis.then(|| ipis as f64 / (runs * threads) as f64),
    })
}

/// Pages in the mapping [`warm_fault_ns`] maps, writes and unmaps over and over: 512 KiB, an
/// ebizzy buffer's size, and fewer pages than a per-CPU free list holds before it spills to the
/// buddy allocator (`pcp->high`: 186 with v3.x's batch of 31, more since v6.7's auto-tuning).
pub const WARM_PAGES: usize = 128;

/// Rounds of [`warm_fault_ns`] left out before timing: the first ones find the pages cold.
const WARM_SKIP: usize = 8;

/// The minor anonymous fault with a warm page, per page in ns: a [`WARM_PAGES`] mapping is
/// mapped, written a page at a time and unmapped, `rounds` times per block; each block keeps
/// its median round (after [`WARM_SKIP`]). The unmap gives the pages back to this CPU's
/// free list, so every later round's faults get them again, still in the cache: what the
/// model's fault path is (its zeroing runs at the cache-resident `clear_page` rate). A fresh
/// region ([`fault_point`]) also pays cold zeroing and, in a guest, the hypervisor's first
/// touches.
pub fn warm_fault_ns(runs: usize, rounds: usize) -> std::io::Result<Summary> {
    let mut blocks = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut per_round = Vec::with_capacity(rounds);
        for round in 0..WARM_SKIP + rounds {
            let m = Mapping::new(WARM_PAGES * PAGE, Backing::Anon)?;
            m.madvise(0, m.len(), Advice::NoHugePage)?;
            let t = Instant::now();
            for p in 0..WARM_PAGES {
                m.write_byte(p * PAGE, 1);
            }
            let ns = t.elapsed().as_nanos() as f64 / WARM_PAGES as f64;
            drop(m);
            if round >= WARM_SKIP {
                per_round.push(ns);
            }
        }
        blocks.push(Summary::of(&per_round).median);
    }
    Ok(Summary::of(&blocks))
}

/// A page whose first write took this many times its region's median is a slow page: a
/// guest fault (entry, allocation, a clear at DRAM rate, exit) stays within a few times its
/// median, a hypervisor's fault that allocates and clears a host huge page takes hundreds of
/// microseconds (docs/references/machine-costs.md#second-level-faults).
pub const SLOW_FACTOR: f64 = 16.0;

/// Seconds [`second_level_faults`] waits before each fresh region: longer than free page
/// reporting's 2 s delay (mm/page_reporting.c `PAGE_REPORTING_DELAY`), so that the blocks the
/// probe's earlier parts freed have been reported to a host that takes them.
pub const REPORT_PAUSE_S: u64 = 3;

/// What the first writes to pages fresh from the buddy lists cost beyond the guest's own
/// fault, as the time in slow pages (a first write over [`SLOW_FACTOR`] x its region's
/// median), per page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondLevel {
    /// Pages per fresh region.
    pub pages: usize,
    /// Per fresh region (written a page at a time after [`REPORT_PAUSE_S`]): time in slow
    /// pages over all its pages, ns a page, net of the waits for the CPU ([`slow_time_net`]).
    pub fresh_slow_ns: Summary,
    /// Slow pages per 512 pages (a 2 MiB block) of a fresh region.
    pub fresh_slow_per_2m: Summary,
    /// The same pages' first writes in all, ns a page.
    pub fresh_ns: Summary,
    /// Per block of as many pages recycled through this CPU's free list ([`warm_fault_ns`]'s
    /// loop, timed a page at a time): time in slow pages, ns a page (interrupts and ticks,
    /// which land on fresh pages alike).
    pub recycled_slow_ns: Summary,
}

impl SecondLevel {
    /// The slow pages' time a fresh page pays beyond a recycled one, ns a page (never below 0).
    pub fn extra_ns(&self) -> f64 {
        (self.fresh_slow_ns.median - self.recycled_slow_ns.median).max(0.0)
    }
}

/// Time in slow pages (over `SLOW_FACTOR` x the median) over all pages, and how many.
fn slow_time(ns: &[f64]) -> (f64, usize) {
    let mut v = ns.to_vec();
    v.sort_by(f64::total_cmp);
    let cut = SLOW_FACTOR * v[v.len() / 2];
    let slow: Vec<f64> = ns.iter().copied().filter(|&t| t > cut).collect();
    (slow.iter().sum::<f64>() / ns.len() as f64, slow.len())
}

/// This thread's time runnable but waiting for its CPU so far, ns: the second field of
/// `/proc/thread-self/schedstat` (CONFIG_SCHED_INFO); 0 where the file is missing.
fn run_delay_ns() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|f| f.parse::<f64>().ok()))
        .unwrap_or(0.0)
}

/// Slow pages' time a page (see [`slow_time`]) less the share of the thread's wait for its CPU
/// (another task ran: such a page is slow too) that fell inside the timed writes, taken in
/// proportion to their share of the `wall` time; with the number of slow pages.
fn slow_time_net(ns: &[f64], wall_ns: f64, run_delay_ns: f64) -> (f64, usize) {
    let (per_page, n) = slow_time(ns);
    let timed: f64 = ns.iter().sum();
    let waited = run_delay_ns * (timed / wall_ns.max(1.0)).min(1.0);
    (((per_page * ns.len() as f64) - waited).max(0.0) / ns.len() as f64, n)
}

/// First writes to `pages` fresh pages a page at a time, each timed, `runs` times, each after
/// [`REPORT_PAUSE_S`]; then as many first writes to pages recycled through this CPU's free list.
/// In a guest whose free pages the host took back (free page reporting, virtio-balloon), the
/// first touch of such a page faults in the host too, which backs it again: rare, long first
/// writes, once per host page. On bare metal the fresh pages only clear at DRAM rate (no
/// slow pages). Both sides' slow time is net of the probe thread's waits for its CPU while
/// other tasks ran (a busy guest), from its scheduler statistics.
pub fn second_level_faults(pages: usize, runs: usize) -> std::io::Result<SecondLevel> {
    let timed = |m: &Mapping, out: &mut Vec<f64>| {
        for p in 0..m.len() / PAGE {
            let t = Instant::now();
            m.write_byte(p * PAGE, 1);
            out.push(t.elapsed().as_nanos() as f64);
        }
    };
    let (mut slow, mut per_2m, mut all, mut recycled) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        std::thread::sleep(std::time::Duration::from_secs(REPORT_PAUSE_S));
        let m = Mapping::new(pages * PAGE, Backing::Anon)?;
        m.madvise(0, m.len(), Advice::NoHugePage)?;
        let mut ns = Vec::with_capacity(pages);
        let (t, d) = (Instant::now(), run_delay_ns());
        timed(&m, &mut ns);
        let (wall, waited) = (t.elapsed().as_nanos() as f64, run_delay_ns() - d);
        drop(m);
        let (s, n) = slow_time_net(&ns, wall, waited);
        slow.push(s);
        per_2m.push(n as f64 * 512.0 / pages as f64);
        all.push(ns.iter().sum::<f64>() / pages as f64);
        let mut ns = Vec::with_capacity(pages);
        let mut t = (Instant::now(), run_delay_ns());
        for round in 0..WARM_SKIP + pages.div_ceil(WARM_PAGES) {
            if round == WARM_SKIP {
                t = (Instant::now(), run_delay_ns());
            }
            let m = Mapping::new(WARM_PAGES * PAGE, Backing::Anon)?;
            m.madvise(0, m.len(), Advice::NoHugePage)?;
            if round < WARM_SKIP {
                for p in 0..WARM_PAGES {
                    m.write_byte(p * PAGE, 1);
                }
            } else {
                timed(&m, &mut ns);
            }
        }
        let (wall, waited) = (t.0.elapsed().as_nanos() as f64, run_delay_ns() - t.1);
        recycled.push(slow_time_net(&ns, wall, waited).0);
    }
    Ok(SecondLevel {
        pages,
        fresh_slow_ns: Summary::of(&slow),
        fresh_slow_per_2m: Summary::of(&per_2m),
        fresh_ns: Summary::of(&all),
        recycled_slow_ns: Summary::of(&recycled),
    })
}

/// Calls timed together inside a block of the null-syscall loop.
const SYSCALL_BATCH: u64 = 1000;

/// A null system call round trip in ns (`getppid`): `runs` blocks of `calls` calls, each block
/// timed in batches of 1000 calls and kept as its median batch (a batch that lost the CPU to
/// another task is an outlier of its block, not its figure); summary over blocks.
pub fn syscall_ns(runs: usize, calls: u64) -> Summary {
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let batches: Vec<f64> = (0..calls.div_ceil(SYSCALL_BATCH))
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..SYSCALL_BATCH {
                        std::hint::black_box(sys::null_syscall());
                    }
                    t.elapsed().as_nanos() as f64 / SYSCALL_BATCH as f64
                })
                .collect();
            Summary::of(&batches).median
        })
        .collect();
    Summary::of(&samples)
}

/// The percentiles [`fault_spread`] reports (those of the model's `noise.step_quantiles`).
pub const SPREAD_PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Cycles by the time-stamp counter (`rdtscp` waits for the work before it to finish).
#[cfg(target_arch = "x86_64")]
fn stamp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: rdtscp only reads the time-stamp counter and IA32_TSC_AUX.
    unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
}

#[cfg(not(target_arch = "x86_64"))]
fn stamp() -> u64 {
    use std::sync::OnceLock;
    static T0: OnceLock<Instant> = OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// How much one kernel path's cost varies from one run of it to the next: `faults` minor
/// anonymous write faults (entry, allocation, zeroing, exit: the model's heaviest step), each
/// timed alone (`rdtscp`, the timer's own cost taken off), as values at [`SPREAD_PERCENTILES`]
/// relative to the median. The 1st-99th percentiles leave out faults that an interrupt or
/// another task interrupted (the model has its own tick).
pub fn fault_spread(faults: usize) -> std::io::Result<Vec<f64>> {
    let empty: Vec<f64> = (0..10_000)
        .map(|_| {
            let t = stamp();
            (stamp() - t) as f64
        })
        .collect();
    let overhead = crate::stats::Summary::of(&empty).median;
    let m = Mapping::new(faults * PAGE, Backing::Anon)?;
    // Base pages only: a huge page would turn most touches into hits.
    let _ = m.madvise(0, m.len(), Advice::NoHugePage);
    let mut v: Vec<f64> = (0..faults)
        .map(|i| {
            let t = stamp();
            m.write_byte(i * PAGE, 1);
            ((stamp() - t) as f64 - overhead).max(1.0)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() - 1) as f64 * p / 100.0).round() as usize];
    let median = at(50.0);
    Ok(SPREAD_PERCENTILES.iter().map(|&p| at(p) / median).collect())
}

/// A context switch between two threads of one process pinned to `cpu`, in ns: they pass a
/// byte back and forth over a socket pair, so each hand-off is a blocking read that sleeps, a
/// write that wakes the other thread, and `schedule()` to it (the same kind of figure as the
/// built-in profiles' borrowed mutex/condvar ping-pong, wake-up included).
pub fn context_switch_ns(cpu: usize, runs: usize, round_trips: u64) -> std::io::Result<Summary> {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (mut a, mut b) = UnixStream::pair()?;
        // Both ends run on threads of their own, so the caller's affinity stays as it was.
        let echo = std::thread::spawn(move || -> std::io::Result<()> {
            sys::pin_to_cpu(cpu)?;
            let mut byte = [0u8; 1];
            for _ in 0..round_trips {
                b.read_exact(&mut byte)?;
                b.write_all(&byte)?;
            }
            Ok(())
        });
        let timer = std::thread::spawn(move || -> std::io::Result<f64> {
            sys::pin_to_cpu(cpu)?;
            let mut byte = [0u8; 1];
            // One round trip first, so both threads sit on the CPU's run queue before timing.
            a.write_all(&byte)?;
            a.read_exact(&mut byte)?;
            let t = Instant::now();
            for _ in 1..round_trips {
                a.write_all(&byte)?;
                a.read_exact(&mut byte)?;
            }
            // Two switches per round trip.
            Ok(t.elapsed().as_nanos() as f64 / (2 * (round_trips - 1)) as f64)
        });
        let ns = timer.join().expect("context-switch timer thread panicked")?;
        echo.join().expect("context-switch echo thread panicked")?;
        samples.push(ns);
    }
    Ok(Summary::of(&samples))
}

/// Clearing one cache-resident 4 KiB page, as MB/s (the zeroing the fault path does, minus
/// the cache misses of a cold page: the profile's `clear_page_mbps` is defined that way).
pub fn clear_page_mbps(runs: usize, clears: u64) -> Summary {
    let mut page = vec![1u8; PAGE];
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for i in 0..clears {
                // A memset of an owned page; black_box keeps every clear.
                page.fill(i as u8);
                std::hint::black_box(&mut page);
            }
            (clears as f64 * PAGE as f64) / (t.elapsed().as_nanos() as f64 / 1000.0)
        })
        .collect();
    Summary::of(&samples)
}

/// Reading one cache-resident 4 KiB page a 64-bit word at a time into a running sum, as MB/s:
/// each word a load of its own (volatile, so neither combined nor vectorised), independent of
/// the others, the sum one add a word. A strided read loop's rate, the profile's
/// `memory.read_page_mbps` (docs/references/machine-costs.md#read-page).
pub fn read_page_mbps(runs: usize, reads: u64) -> Summary {
    let page = vec![1u64; PAGE / 8];
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let mut sum = 0u64;
            for _ in 0..reads {
                let p = std::hint::black_box(page.as_ptr());
                for i in 0..PAGE / 8 {
                    // SAFETY: i < PAGE / 8, the length of `page`, which outlives the loop.
                    sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(p.add(i)) });
                }
            }
            std::hint::black_box(sum);
            (reads as f64 * PAGE as f64) / (t.elapsed().as_nanos() as f64 / 1000.0)
        })
        .collect();
    Summary::of(&samples)
}

/// Zeroes one 4 KiB page as the kernel's `clear_page_erms` does (x86-64 since v4.x: one
/// `rep stosb`), elsewhere with a memset.
fn clear_one_page(page: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the string store writes exactly `page.len()` bytes from `page.as_mut_ptr()`, a
    // buffer this function borrows mutably; rdi/rcx are clobbered and declared so.
    unsafe {
        core::arch::asm!(
            "rep stosb",
            inout("rdi") page.as_mut_ptr() => _,
            inout("rcx") page.len() => _,
            in("al") 0u8,
            options(nostack, preserves_flags)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    page.fill(0);
}

/// Clearing pages one core wrote long ago, as MB/s: a buffer of `bytes` (well past the last
/// cache), written once so every page is mapped, then cleared a page at a time in address
/// order, `runs` times; each pass finds the lines it clears evicted by the rest of the buffer.
/// What zeroing a page fresh from the buddy allocator costs (`memory.clear_dram_mbps`).
pub fn clear_dram_mbps(runs: usize, bytes: usize) -> Summary {
    let mut buf = vec![1u8; bytes];
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for page in buf.chunks_exact_mut(PAGE) {
                clear_one_page(page);
            }
            std::hint::black_box(&mut buf);
            bytes as f64 / (t.elapsed().as_nanos() as f64 / 1000.0)
        })
        .collect();
    Summary::of(&samples)
}

/// DRAM-to-DRAM copy of one core as MB/s, buffers of `bytes` (well past the last cache).
pub fn memcpy_mbps(runs: usize, bytes: usize) -> Summary {
    let src = vec![7u8; bytes];
    let mut dst = vec![0u8; bytes];
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
            bytes as f64 / (t.elapsed().as_nanos() as f64 / 1000.0)
        })
        .collect();
    Summary::of(&samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_cost_something_and_both_thread_counts_run() {
        let cpus = sys::allowed_cpus();
        for threads in [1, 2] {
            let p = fault_point(&cpus, threads, 256, 1).unwrap();
            assert_eq!(p.fault_ns.n, threads);
            // A fault with zeroing takes far longer than a cached store (>= 50 ns anywhere).
            assert!(p.fault_ns.median > 50.0, "{p:?}");
        }
        assert!(syscall_ns(1, 1000).median > 1.0);
        let q = fault_spread(2000).unwrap();
        assert!(q.len() == 9 && q[4] == 1.0 && q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
        assert!(clear_page_mbps(1, 1000).median > 10.0);
        assert!(read_page_mbps(1, 1000).median > 10.0);
        assert!(memcpy_mbps(1, 1 << 20).median > 10.0);
        assert!(clear_dram_mbps(1, 4 << 20).median > 10.0);
        // The recycled pages still fault: entry, allocation, zeroing, exit.
        let w = warm_fault_ns(2, 3).unwrap();
        assert!(w.n == 2 && w.median > 50.0, "{w:?}");
    }

    #[test]
    fn slow_pages_are_those_far_above_the_median() {
        // 1000 faults of 1 us, two of them 500 us (a host huge page each), one of 10 us.
        let mut ns = vec![1000.0; 1000];
        ns[10] = 500_000.0;
        ns[600] = 500_000.0;
        ns[700] = 10_000.0;
        let (per_page, n) = slow_time(&ns);
        assert_eq!(n, 2);
        assert!((per_page - 1000.0).abs() < 1e-9, "{per_page}");
        // None slow: nothing charged.
        assert_eq!(slow_time(&[1000.0; 64]), (0.0, 0));
        // 0.4 ms of the two slow pages was another task's turn on the CPU, the timed writes
        // half the wall time: 0.2 ms of it falls inside them.
        let timed: f64 = ns.iter().sum();
        let (net, n) = slow_time_net(&ns, 2.0 * timed, 400_000.0);
        assert_eq!(n, 2);
        assert!((net - 800.0).abs() < 1e-9, "{net}");
        // Never below 0, and no wait, no change.
        assert_eq!(slow_time_net(&ns, timed, 1e12).0, 0.0);
        assert_eq!(slow_time_net(&ns, timed, 0.0).0, per_page);
    }

    #[test]
    fn second_level_probe_runs_and_never_goes_negative() {
        let s = second_level_faults(1024, 1).unwrap();
        assert_eq!((s.pages, s.fresh_slow_ns.n, s.recycled_slow_ns.n), (1024, 1, 1));
        assert!(s.fresh_ns.median > 50.0 && s.extra_ns() >= 0.0, "{s:?}");
    }
}
