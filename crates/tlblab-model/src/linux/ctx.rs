//! The one seam between the kernel model and the engine that runs it.
//!
//! Kernel code never sees the agenda or another CPU's clock. For each step it gets a [`Ctx`]:
//! the CPU it runs on and the time, the CPU's attribution buckets, its queue of kernel
//! continuations, and [`Engine`], the few questions and requests that reach other CPUs (send an
//! interrupt, make a CPU step again, ask whether another CPU's event comes first). Requests take
//! effect at once rather than after the step: a shootdown handler asks, between two requests of
//! one drain, whether another CPU's event comes first, and an initiator it just released must
//! already count (seed 002's line ping-pong depends on that order).

use std::collections::VecDeque;

use super::Continuation;
use crate::attribution::{Bucket, CpuTime};
use crate::engine::timeline::StepLog;
use crate::time::Ps;

/// What the kernel asks of the engine (implemented by `engine::sim`).
pub trait Engine {
    /// An interrupt for `cpu` will arrive at `at`.
    fn send_ipi(&mut self, cpu: u32, at: Ps);
    /// `cpu` steps again at `at` (not before the end of its current step), unless it already
    /// steps earlier: a task woken on an idle CPU, an initiator whose last acknowledgement came.
    fn kick(&mut self, cpu: u32, at: Ps);
    /// Whether `cpu` has a step on the agenda.
    fn stepping(&self, cpu: u32) -> bool;
    /// The earliest event of a CPU other than `cpu`: (time, CPU).
    fn first_other(&self, cpu: u32) -> Option<(Ps, u32)>;
    /// The next interrupt arrival on `cpu` not yet noted.
    fn next_arrival(&self, cpu: u32) -> Option<Ps>;
    /// An interrupt has arrived on `cpu` and is not taken yet.
    fn irq_pending(&self, cpu: u32) -> bool;
    /// `cpu`'s current step runs with interrupts enabled: one arriving before it ends is taken
    /// at its arrival, and the rest of the step runs after the handler.
    fn irqs_on(&mut self, cpu: u32);
}

/// The context of one kernel step on one CPU.
pub struct Ctx<'a> {
    pub cpu: u32,
    /// When the step starts.
    pub now: Ps,
    time: &'a mut CpuTime,
    steps: &'a mut VecDeque<Continuation>,
    eng: &'a mut dyn Engine,
    /// Where a timeline is recorded (`tlblab run --timeline`, engine/timeline.rs): the step's
    /// charges in the order made and its IPIs; `None` otherwise, costing one branch a charge.
    log: Option<&'a mut StepLog>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        cpu: u32,
        now: Ps,
        time: &'a mut CpuTime,
        steps: &'a mut VecDeque<Continuation>,
        eng: &'a mut dyn Engine,
    ) -> Ctx<'a> {
        Ctx { cpu, now, time, steps, eng, log: None }
    }

    /// This step's charges and IPIs are also logged to `log` (a timeline is recorded).
    pub fn with_log(mut self, log: Option<&'a mut StepLog>) -> Ctx<'a> {
        self.log = log;
        self
    }

    /// Charges `d` of this CPU's time to bucket `b`.
    #[inline]
    pub fn charge(&mut self, b: Bucket, d: Ps) {
        self.time.by_bucket[b as usize] += d;
        self.time.step_mask |= 1 << b as u32;
        if let Some(log) = self.log.as_deref_mut() {
            log.charge(b, d, None);
        }
    }

    /// Charges `d` of waiting for `lock` (its name as Linux calls it: `mmap_lock`,
    /// `zone->lock`) to [`Bucket::LockWait`]; a timeline names the lock.
    #[inline]
    pub fn lock_wait(&mut self, lock: &'static str, d: Ps) {
        self.time.by_bucket[Bucket::LockWait as usize] += d;
        self.time.step_mask |= 1 << Bucket::LockWait as u32;
        if let Some(log) = self.log.as_deref_mut() {
            log.charge(Bucket::LockWait, d, Some(lock));
        }
    }

    /// This CPU's time charged to `b` so far.
    pub fn charged(&self, b: Bucket) -> Ps {
        self.time.by_bucket[b as usize]
    }

    /// Queues `s` to run next on this CPU (before whatever was queued).
    #[inline]
    pub fn then(&mut self, s: Continuation) {
        self.steps.push_front(s);
    }

    /// Queues `steps` to run next on this CPU, in the order given (all before whatever was
    /// queued): a call's phases read top to bottom as they run.
    pub fn then_all<I>(&mut self, steps: I)
    where
        I: IntoIterator<Item = Continuation>,
        I::IntoIter: DoubleEndedIterator,
    {
        for s in steps.into_iter().rev() {
            self.steps.push_front(s);
        }
    }

    /// The CPU is between operations (no kernel continuation queued): on its way back to user
    /// space.
    pub fn in_user(&self) -> bool {
        self.steps.is_empty()
    }

    /// Swaps the CPU's queued continuations with a task's saved ones (a context switch).
    pub fn swap_steps(&mut self, saved: &mut VecDeque<Continuation>) {
        std::mem::swap(self.steps, saved);
    }

    pub fn send_ipi(&mut self, cpu: u32, at: Ps) {
        if let Some(log) = self.log.as_deref_mut() {
            log.send(cpu, at);
        }
        self.eng.send_ipi(cpu, at);
    }

    pub fn kick(&mut self, cpu: u32, at: Ps) {
        self.eng.kick(cpu, at);
    }

    pub fn stepping(&self, cpu: u32) -> bool {
        self.eng.stepping(cpu)
    }

    /// Whether another CPU's event comes before this CPU's work at `t` (ties go to the lower
    /// CPU id, as the agenda orders them), or an interrupt arrives here by `t`.
    pub fn others_before(&self, t: Ps) -> bool {
        if let Some((to, c)) = self.eng.first_other(self.cpu) {
            if to < t || (to == t && c < self.cpu) {
                return true;
            }
        }
        self.eng.next_arrival(self.cpu).is_some_and(|a| a <= t)
    }

    /// This step runs with interrupts enabled (a user computation, a page fault or a system
    /// call body: x86 takes interrupts there), so an interrupt arriving during it is taken at
    /// once, not at its end. Its effects stay where the step put them; only its end moves.
    pub fn irqs_on(&mut self) {
        self.eng.irqs_on(self.cpu);
    }

    /// An interrupt arrives on this CPU by `t`, or waits to be taken.
    pub fn irq_by(&self, t: Ps) -> bool {
        self.eng.irq_pending(self.cpu) || self.eng.next_arrival(self.cpu).is_some_and(|a| a <= t)
    }

    /// No interrupt is on its way to this CPU or waiting to be taken.
    pub fn irq_quiet(&self) -> bool {
        self.eng.next_arrival(self.cpu).is_none() && !self.eng.irq_pending(self.cpu)
    }
}
