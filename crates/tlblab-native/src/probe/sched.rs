//! The waker's side of a wake-up across CPUs: what `try_to_wake_up` costs the task that wakes
//! another, asleep on a different CPU that idles meanwhile (a loopback receiver between
//! datagrams, a pipe reader between messages).
//!
//! A waiter thread pinned to CPU `b` sleeps in `futex(FUTEX_WAIT)`; the waker, pinned to CPU `a`,
//! spins 20 us (so the waiter is asleep and its CPU idle), sets the word and times its
//! `futex(FUTEX_WAKE)`; the waiter clears the word and sleeps again. The same call with nobody
//! waiting is the baseline; the difference is the wake-up proper: the futex queue's unlink and
//! `try_to_wake_up` (task selection, the enqueue, and the interrupt that rouses the idle CPU:
//! on a guest, the virtual IPI to a halted vCPU). The same loop also times the woken task's
//! latency: from the start of the wake-up until the waker sees the word the woken thread clears,
//! which adds the idle CPU's way out of idle (on a guest without polling idle: the halted vCPU's
//! exit and the interrupt's injection), the switch to the task and its return to user space.
//!
//! A second loop wakes the same waiter while its CPU is busy ([`busy_wake_ns`]): a spinner runs
//! there, so `try_to_wake_up` enqueues the task on the remote runqueue under its lock instead of
//! handing it to the CPU's wake list (ttwu_queue_cond, Linux 6.0+: the wake list is for an idle
//! target or another LLC), and no interrupt goes out, since the waiter is `SCHED_BATCH` and
//! a batch task never preempts on wake-up (check_preempt_wakeup_fair, 6.18). What the idle
//! target costs the waker beyond it is the interrupt that rouses the idle CPU.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stats::Summary;
use crate::sys;

/// How long the waker spins before each wake-up, so the waiter's CPU has gone idle.
const IDLE_FIRST: Duration = Duration::from_micros(20);

fn futex(word: &AtomicU32, op: libc::c_int, val: u32) -> libc::c_long {
    // SAFETY: FUTEX_WAIT and FUTEX_WAKE read the aligned u32 the reference points to, and no
    // timeout or second address is passed.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const AtomicU32,
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    }
}

/// The waiter's side of both loops: `wakes` times, sleep in `FUTEX_WAIT` until the word is set,
/// then clear it.
fn sleep_until_woken(w: &AtomicU32, wakes: u32) {
    for _ in 0..wakes {
        while w.load(Ordering::Acquire) == 0 {
            futex(w, libc::FUTEX_WAIT, 0);
        }
        w.store(0, Ordering::Release);
    }
}

/// Median ns of `FUTEX_WAKE` with nobody waiting, over `calls`.
fn wake_nobody_ns(calls: u32) -> f64 {
    let word = AtomicU32::new(0);
    let mut per: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                futex(&word, libc::FUTEX_WAKE, 1);
            }
            t.elapsed().as_nanos() as f64 / calls as f64
        })
        .collect();
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// A wake-up across CPUs, one median per run: the waker's time less a wake of nobody, and the
/// time until the woken thread has run (its store seen by the waker).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RemoteWake {
    pub waker_ns: Summary,
    pub latency_ns: Summary,
}

/// The idle times before a wake-up [`wake_latency_by_idle`] measures, in us.
pub const IDLE_POINTS_US: [u64; 5] = [2, 5, 20, 100, 1000];

/// A wake-up's latency after the target CPU idled `idle_us` (the waker spinning meanwhile).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IdleLatency {
    pub idle_us: u64,
    pub latency_ns: Summary,
}

/// [`RemoteWake`]'s latency at each of [`IDLE_POINTS_US`]: how the way out of idle grows with
/// the time idle (deeper C-states on bare metal; on a KVM guest, the host's adaptive halt
/// polling, which catches a wake-up soon after the halt and not one long after).
pub fn wake_latency_by_idle(
    a: usize,
    b: usize,
    runs: usize,
    wakes: u32,
) -> std::io::Result<Vec<IdleLatency>> {
    IDLE_POINTS_US
        .iter()
        .map(|&idle_us| {
            let w = remote_wake_after(a, b, runs, wakes, Duration::from_micros(idle_us))?;
            Ok(IdleLatency { idle_us, latency_ns: w.latency_ns })
        })
        .collect()
}

/// [`RemoteWake`] of a thread asleep on CPU `b`, woken from CPU `a`, `wakes` per run.
pub fn remote_wake_ns(a: usize, b: usize, runs: usize, wakes: u32) -> std::io::Result<RemoteWake> {
    remote_wake_after(a, b, runs, wakes, IDLE_FIRST)
}

/// [`remote_wake_ns`] with the waker spinning `idle` before each wake-up.
fn remote_wake_after(
    a: usize,
    b: usize,
    runs: usize,
    wakes: u32,
    idle: Duration,
) -> std::io::Result<RemoteWake> {
    let mut samples = Vec::with_capacity(runs);
    let mut latencies = Vec::with_capacity(runs);
    for _ in 0..runs {
        let word = Arc::new(AtomicU32::new(0));
        let w = Arc::clone(&word);
        let waiter = std::thread::spawn(move || -> std::io::Result<()> {
            sys::pin_to_cpu(b)?;
            sleep_until_woken(&w, wakes);
            Ok(())
        });
        let waker = std::thread::spawn(move || -> std::io::Result<(f64, f64)> {
            sys::pin_to_cpu(a)?;
            let mut ns = Vec::with_capacity(wakes as usize);
            let mut lat = Vec::with_capacity(wakes as usize);
            for _ in 0..wakes {
                let t = Instant::now();
                while t.elapsed() < idle {
                    std::hint::spin_loop();
                }
                let t = Instant::now();
                word.store(1, Ordering::Release);
                futex(&word, libc::FUTEX_WAKE, 1);
                ns.push(t.elapsed().as_nanos() as f64);
                while word.load(Ordering::Acquire) != 0 {
                    std::hint::spin_loop();
                }
                lat.push(t.elapsed().as_nanos() as f64);
            }
            ns.sort_by(f64::total_cmp);
            lat.sort_by(f64::total_cmp);
            Ok((ns[ns.len() / 2] - wake_nobody_ns(wakes.max(1000)), lat[lat.len() / 2]))
        });
        let (ns, lat) = waker.join().expect("wake-up timer thread panicked")?;
        waiter.join().expect("wake-up waiter thread panicked")?;
        samples.push(ns.max(0.0));
        latencies.push(lat);
    }
    Ok(RemoteWake { waker_ns: Summary::of(&samples), latency_ns: Summary::of(&latencies) })
}

/// The waker's time of a wake-up on its own CPU, less a wake of nobody, one median per run,
/// `wakes` per run: waker and waiter both pinned to `cpu`, the waiter `SCHED_BATCH` so it never
/// preempts the waker; the waker then yields until the woken waiter has run and slept again.
pub fn local_wake_ns(cpu: usize, runs: usize, wakes: u32) -> std::io::Result<Summary> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let word = Arc::new(AtomicU32::new(0));
        let w = Arc::clone(&word);
        let waiter = std::thread::spawn(move || -> std::io::Result<()> {
            sys::pin_to_cpu(cpu)?;
            sys::set_batch()?;
            sleep_until_woken(&w, wakes);
            Ok(())
        });
        let waker = std::thread::spawn(move || -> std::io::Result<f64> {
            sys::pin_to_cpu(cpu)?;
            let mut ns = Vec::with_capacity(wakes as usize);
            for _ in 0..wakes {
                let t = Instant::now();
                word.store(1, Ordering::Release);
                futex(&word, libc::FUTEX_WAKE, 1);
                ns.push(t.elapsed().as_nanos() as f64);
                while word.load(Ordering::Acquire) != 0 {
                    // SAFETY: sched_yield takes no arguments.
                    unsafe { libc::sched_yield() };
                }
            }
            ns.sort_by(f64::total_cmp);
            Ok(ns[ns.len() / 2] - wake_nobody_ns(wakes.max(1000)))
        });
        let ns = waker.join().expect("wake-up timer thread panicked");
        waiter.join().expect("wake-up waiter thread panicked")?;
        samples.push(ns?.max(0.0));
    }
    Ok(Summary::of(&samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_across_cpus_costs_the_waker_more_than_a_wake_of_nobody() {
        let cpus = sys::allowed_cpus();
        if cpus.len() < 2 {
            return;
        }
        let w = remote_wake_ns(cpus[0], cpus[1], 3, 50).unwrap();
        let s = &w.waker_ns;
        // A futex wake of nobody is a system call; waking a sleeper on another CPU adds the
        // unlink, the enqueue and an interrupt to that CPU: tens of ns at the very least.
        assert!(s.n == 3 && s.max > 0.0 && s.median.is_finite(), "{s:?}");
        // The woken thread runs only after the waker's call has begun (its clock includes it).
        assert!(w.latency_ns.n == 3 && w.latency_ns.min > 0.0, "{w:?}");
        let by_idle = wake_latency_by_idle(cpus[0], cpus[1], 2, 20).unwrap();
        assert_eq!(by_idle.iter().map(|p| p.idle_us).collect::<Vec<_>>(), IDLE_POINTS_US);
        assert!(by_idle.iter().all(|p| p.latency_ns.n == 2 && p.latency_ns.min > 0.0), "{by_idle:?}");
        let b = local_wake_ns(cpus[0], 3, 50).unwrap();
        assert!(b.n == 3 && b.median.is_finite() && b.min >= 0.0, "{b:?}");
    }
}
