//! The call-function IPI (kernel/smp.c, v5.18): per-CPU `call_single_queue`s of requests, and
//! the interrupt that drains them (`generic_smp_call_function_single_interrupt` ->
//! `flush_smp_call_function_queue`). The only requests modelled are TLB flushes; what a request
//! does is tlbflush.rs's `flush_tlb_func` (or rmap.rs's batched flush); the sender's side is
//! `call_function_many`.

use std::collections::VecDeque;

use crate::attribution::Bucket;
use crate::hw::coherence::RmwLine;
use crate::hw::cpumask::CpuMask;
use crate::linux::arch::x86::mm::tlb::{FlushInfo, RemoteDrain};
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::{Boundary, Continuation, Kernel};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// Cross-CPU calls, counted.
    Counters {
        ipis_sent,
        ipis_received,
        /// Remote `flush_tlb_func` calls (`nr_tlb_remote_flush_received`, the TLB row of
        /// /proc/interrupts): one per queued request, however many one interrupt drains.
        remote_flushes_received,
        /// `smp_call_function_many` enqueue loops stopped by an interrupt (taken, then resumed).
        send_loops_interrupted,
        /// Targets the enqueue loop found lazy and skipped (`lazy_test = in-queue`), and the
        /// times it gave way to other CPUs' earlier events before testing a target.
        lazy_skipped_in_loop,
        send_loop_yields,
    }
}

/// What an interrupted `Kernel::call_function_many` continues with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The rest of the enqueue loop, the IPIs and the wait.
    Send,
}

/// An enqueue loop in progress: the shootdown, the targets not yet queued, those to interrupt.
#[derive(Debug, Clone)]
pub struct SendLoop {
    sd: usize,
    left: CpuMask,
    ipis: CpuMask,
    post_local: bool,
    /// This call IPIs only targets whose queue was empty (`coalesce_ipis` for its target count).
    coalesce: bool,
    /// The loop tests each target's laziness when it reaches it and skips a lazy one
    /// (`on_each_cpu_cond_mask(tlb_is_not_lazy)`: `lazy_test = in-queue`).
    skip_lazy: bool,
}

/// A flush request on a CPU's `call_single_queue`: when the sender's `llist_add` landed, the
/// shootdown whose `flush_tlb_info` it carries, and whether its sender IPIs only an empty queue.
#[derive(Debug, Clone, Copy)]
pub struct Csd {
    pub at: Ps,
    pub shootdown: u32,
    pub coalesced: bool,
}

/// A CPU's `call_single_queue` (kernel/smp.c): its requests in enqueue-time order, and its head,
/// on which every sender's `llist_add` and the handler's `llist_del_all` are atomic RMWs. Kept
/// apart from [`crate::linux::cpu::Cpu`], in one dense vector: a shootdown touches the queue of every target.
pub struct CallQueue {
    pub entries: VecDeque<Csd>,
    pub head: RmwLine,
    /// The `remote_drain = max-gen` stage in progress on this CPU.
    pub drain: Drain,
    /// When the handler's last `csd_unlock` store has its line and leaves the store buffer:
    /// the next serialising instruction (a flush, the IRET) waits for it.
    pub unlock_lands: Ps,
}

/// Seed 002's proposed stage in `flush_smp_call_function_queue` (`remote_drain = max-gen`),
/// between the steps of one interrupt: the requests walked, not yet acknowledged, and whether
/// their one flush is done.
#[derive(Debug, Default)]
pub struct Drain {
    pub walked: VecDeque<Csd>,
    pub flushed: bool,
    /// Scratch: the walked requests' `flush_tlb_info`s that join the one flush.
    joined: Vec<FlushInfo>,
}

/// A shootdown in flight (allocated by `Kernel::call_function_many`, waited for and freed by
/// `Kernel::csd_wait`): the `flush_tlb_info` its requests carry, and what its initiator
/// waits for.
#[derive(Debug, Clone, Copy)]
pub struct Shootdown {
    pub info: FlushInfo,
    pub initiator: u32,
    pub pending: u32,
    /// When the initiator sees the last acknowledgement / finishes its own flush.
    pub last_ack: Ps,
    pub local_done: Ps,
    /// A reclaim batch flush (v4.3 `try_to_unmap_flush`): every target runs
    /// `percpu_flush_tlb_batch_pages` (a full flush of whatever it runs) instead of
    /// `flush_tlb_func` on `info`.
    pub batch: bool,
}

/// The cross-CPU call machinery's state (kernel/smp.c): every CPU's `call_single_queue`, the
/// shootdowns in flight that their requests point to, and scratch for the IPI fan-out.
pub struct Smp {
    pub(in crate::linux) csqs: Vec<CallQueue>,
    /// Shootdowns in flight (a request's `csd` data: the `flush_tlb_info` and its acknowledgements),
    /// by slot.
    pub(in crate::linux) shootdowns: Vec<Shootdown>,
    /// Finished shootdown slots, reused so memory stays flat over long runs.
    pub(in crate::linux) free_shootdowns: Vec<usize>,
    /// Scratch for IPI fan-outs.
    pub(in crate::linux) fan: Vec<(u32, Ps)>,
}

impl Kernel {
    /// An interrupt step on this CPU: the call-function handler's entry (`new`: the engine just
    /// took a pending interrupt) or its continuation. Its kernel-text refills are charged as
    /// walks as they happen, the rest as handler time. Returns the step's duration.
    pub fn interrupt(&mut self, ctx: &mut Ctx, new: bool) -> Ps {
        let walks = ctx.charged(Bucket::Walk);
        let d = if new { self.handle_irq(ctx) } else { self.drain_taken(ctx, ctx.now) };
        let walked = ctx.charged(Bucket::Walk) - walks;
        ctx.charge(Bucket::Handler, d - walked);
        d
    }

    /// The call-function interrupt (`generic_smp_call_function_single_interrupt` ->
    /// `flush_smp_call_function_queue`, v5.18): entry, `llist_del_all` of the queue, then for
    /// each request in order `flush_tlb_func` and `csd_unlock` (the acknowledgement the sender
    /// spins on), exit. Returns the time this step took; the handler may go on in later steps
    /// (see [`Self::drain_taken`]).
    fn handle_irq(&mut self, ctx: &mut Ctx) -> Ps {
        let ipi = self.costs.hw.ipi.expect("IPIs need IPI costs");
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let (cpu, now) = (ctx.cpu, ctx.now);
        self.counters.smp.ipis_received += 1;
        let ci = cpu as usize;
        let mut d = ipi.handler_entry + self.kernel_path(ctx, Path::IrqEntry);
        let head = self.smp.csqs[ci].head.rmw(cpu, now + d, &topo, &lines);
        d += self.stall(cpu, head);
        let taken_at = now + d;
        let c = &mut self.cpus[ci];
        let q = &mut self.smp.csqs[ci].entries;
        while q.front().is_some_and(|e| e.at <= taken_at) {
            c.taken.extend(q.pop_front());
        }
        c.in_irq = true;
        d + self.drain_taken(ctx, now + d)
    }

    /// Handles the taken requests one after another from `now`, and exits the handler after the
    /// last. Every other CPU's event that falls before a request runs before it, exactly as if
    /// each request were an event of its own: the lines a request touches (`mm->tlb_gen`, the
    /// csd) move between the requests of one drain, as they do in a shootdown storm (seed 002's
    /// E->S / S->E ping-pong). Returns the time spent in this step; if it stops early, the CPU
    /// goes on at its end.
    fn drain_taken(&mut self, ctx: &mut Ctx, now: Ps) -> Ps {
        if self.config.flush.remote_drain == RemoteDrain::MaxGen {
            return self.drain_max_gen(ctx, now);
        }
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let cpu = ctx.cpu;
        let ci = cpu as usize;
        let mut d = Ps::ZERO;
        while let Some(&e) = self.cpus[ci].taken.front() {
            // This CPU's own agenda entry is the continuation being computed: look past it,
            // at the other CPUs and at this CPU's interrupt arrivals.
            if ctx.others_before(now + d) {
                return d;
            }
            self.cpus[ci].taken.pop_front();
            self.counters.smp.remote_flushes_received += 1;
            let Shootdown { info, batch, .. } = self.smp.shootdowns[e.shootdown as usize];
            // The csd line travels sender -> handler (llist_reverse_order's pointer chase
            // loads each node, then func and info), handler -> sender (csd_unlock).
            let hop = lines.transfer(topo.distance(info.initiator, cpu));
            d += self.stall(cpu, hop);
            d += self.kernel_path(ctx, Path::FlushFunc);
            // flush_tlb_func reads the initiator's flush_tlb_info (mm, range, new_tlb_gen); v4.3's
            // batched flush passes its on-stack info the same way (flush_tlb_others).
            let i = info.initiator as usize;
            let info_read = self.cpus[i].x86.flush_info_line.read(cpu, now + d, &topo, &lines);
            let fence = self.smp.csqs[ci].unlock_lands;
            d += if batch {
                // Its full flush is serialising: it waits for the last unlock's store too.
                let ready = (now + d + info_read).max(fence);
                self.stall(cpu, ready - (now + d)) + self.flush_tlb_batch_pages(cpu)
            } else {
                self.run_remote_flush_func(cpu, now + d, &info, info_read, fence)
            };
            self.unlock_store(ctx, e.shootdown, now + d, hop);
        }
        let drain = self.store_drain(ci, now + d);
        d + self.stall(cpu, drain) + self.irq_exit(ctx)
    }

    /// `csd_unlock` at `at`, a plain store (`smp_store_release`) to the csd line, which the
    /// sender also holds (it filled the csd and may be spinning on it): on x86 the store
    /// retires into the store buffer and the handler goes on while the line's ownership
    /// request (one hop to the sender) is in flight
    /// (docs/references/machine-costs.md#memory-level-parallelism); the sender's spin then reads
    /// the line back (a second hop), when the acknowledgement lands.
    fn unlock_store(&mut self, ctx: &mut Ctx, sd: u32, at: Ps, hop: Ps) {
        let ci = ctx.cpu as usize;
        self.smp.csqs[ci].unlock_lands = self.smp.csqs[ci].unlock_lands.max(at + hop);
        self.csd_unlock(ctx, sd, at + hop + hop);
    }

    /// The wait at a serialising instruction at `at` (the IRET of the handler's exit) for the
    /// handler's `csd_unlock` stores to leave the store buffer.
    fn store_drain(&self, ci: usize, at: Ps) -> Ps {
        self.smp.csqs[ci].unlock_lands.max(at) - at
    }

    /// `csd_unlock` of a request of shootdown `sd`: the acknowledgement lands at the sender at
    /// `ack`; the last one wakes it.
    fn csd_unlock(&mut self, ctx: &mut Ctx, sd: u32, ack: Ps) {
        let s = &mut self.smp.shootdowns[sd as usize];
        s.pending -= 1;
        s.last_ack = s.last_ack.max(ack);
        if s.pending == 0 && !ctx.stepping(s.initiator) {
            let at = s.last_ack.max(s.local_done);
            ctx.kick(s.initiator, at);
        }
    }

    /// The handler's exit once every taken request is acknowledged; returns its time.
    fn irq_exit(&mut self, ctx: &mut Ctx) -> Ps {
        let ipi = self.costs.hw.ipi.expect("IPIs need IPI costs");
        let cpu = ctx.cpu;
        let ci = cpu as usize;
        // A request that landed after llist_del_all found the queue empty, so its sender sent
        // an IPI. (Senders run whole in the model: its ICR write is not charged to it.) A sender
        // that does not coalesce sent one whatever it found.
        if let Some(&e) = self.smp.csqs[ci].entries.front() {
            if e.coalesced && ctx.irq_quiet() {
                self.send_ipi(ctx, cpu, e.at + ipi.send + ipi.delivery);
            }
        }
        self.cpus[ci].in_irq = false;
        ipi.handler_exit + self.kernel_path(ctx, Path::IrqExit)
    }

    /// Seed 002's closing proposal (Nadav Amit, 2022-06-08; `remote_drain = max-gen`;
    /// docs/references/linux-6x.md#remote-drain), grafted on v5.18's handler: a stage in
    /// `flush_smp_call_function_queue` first walks the taken requests (the csd line from its
    /// sender, the initiator's `flush_tlb_info`), then runs one flush for those of the mm this
    /// CPU runs, to the largest `f->new_tlb_gen`, never reading `mm->tlb_gen` (any other
    /// request runs `flush_tlb_func` alone there, as in every kernel), then acknowledges every
    /// request: no sender is released before the flush that covers it. Each stage gives way to
    /// the other CPUs' earlier events, as [`Self::drain_taken`] does between requests. Returns
    /// the time spent in this step.
    fn drain_max_gen(&mut self, ctx: &mut Ctx, now: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let cpu = ctx.cpu;
        let ci = cpu as usize;
        let mut d = Ps::ZERO;
        while let Some(&e) = self.cpus[ci].taken.front() {
            if ctx.others_before(now + d) {
                return d;
            }
            self.cpus[ci].taken.pop_front();
            self.counters.smp.remote_flushes_received += 1;
            let info = self.smp.shootdowns[e.shootdown as usize].info;
            // Two dependent loads (the node, then its `info`): serial stalls.
            d += self.stall(cpu, lines.transfer(topo.distance(info.initiator, cpu)));
            let i = info.initiator as usize;
            let info_read = self.cpus[i].x86.flush_info_line.read(cpu, now + d, &topo, &lines);
            d += self.stall(cpu, info_read);
            self.smp.csqs[ci].drain.walked.push_back(e);
        }
        if !self.smp.csqs[ci].drain.flushed {
            if ctx.others_before(now + d) {
                return d;
            }
            d += self.kernel_path(ctx, Path::FlushFunc);
            // The flush is serialising: the last interrupt's unlock stores have drained.
            let drain = self.store_drain(ci, now + d);
            d += self.stall(cpu, drain);
            let walked = std::mem::take(&mut self.smp.csqs[ci].drain.walked);
            let mut joined = std::mem::take(&mut self.smp.csqs[ci].drain.joined);
            joined.clear();
            for e in &walked {
                let Shootdown { info, batch, .. } = self.smp.shootdowns[e.shootdown as usize];
                if self.drain_joins_on(cpu, &info, batch) {
                    joined.push(info);
                } else {
                    d += if batch {
                        self.flush_tlb_batch_pages(cpu)
                    } else {
                        self.run_flush_func(cpu, now + d, &info)
                    };
                }
            }
            if let Some(mm) = joined.first().map(|f| f.mm) {
                d += self.run_flush_max_gen(cpu, now + d, mm, &joined);
            }
            let dr = &mut self.smp.csqs[ci].drain;
            (dr.walked, dr.joined, dr.flushed) = (walked, joined, true);
        }
        while let Some(&e) = self.smp.csqs[ci].drain.walked.front() {
            if ctx.others_before(now + d) {
                return d;
            }
            self.smp.csqs[ci].drain.walked.pop_front();
            let initiator = self.smp.shootdowns[e.shootdown as usize].info.initiator;
            let hop = lines.transfer(topo.distance(initiator, cpu));
            self.unlock_store(ctx, e.shootdown, now + d, hop);
        }
        self.smp.csqs[ci].drain.flushed = false;
        let drain = self.store_drain(ci, now + d);
        d + self.stall(cpu, drain) + self.irq_exit(ctx)
    }

    /// An interrupt for `cpu` will arrive at `at`.
    pub(in crate::linux) fn send_ipi(&mut self, ctx: &mut Ctx, cpu: u32, at: Ps) {
        self.counters.smp.ipis_sent += 1;
        ctx.send_ipi(cpu, at);
    }
}

impl Kernel {
    /// `smp_call_function_many(targets, func, info, wait = 1)` from this CPU, its requests
    /// ready at `t0` (kernel/smp.c, v5.18; the v3.9+ llist queues): per target, csd_lock and fill
    /// the sender's csd for it (a store to a line the target wrote last, at its previous unlock),
    /// then llist_add it to the target's call_single_queue (an RMW on the queue head). Where the
    /// kernel coalesces (`coalesce_ipis`: v4.13+ always, v3.9-v4.12 a lone target only) only
    /// targets whose queue was empty get an IPI, otherwise every target; all at the loop's end.
    /// Records the shootdown the sender waits on; with `post_local` the sender then flushes itself
    /// (v5.13+ `concurrent_local`) and sets its `local_done`. With `skip_lazy` the loop tests
    /// each target as it reaches it and skips a lazy one (the `cond_func` of
    /// `on_each_cpu_cond_mask`).
    /// Returns the time from `t0` this step took; the loop may go on in a continuation.
    pub(in crate::linux) fn call_function_many(
        &mut self,
        ctx: &mut Ctx,
        info: FlushInfo,
        batch: bool,
        targets: &CpuMask,
        t0: Ps,
        post_local: bool,
        skip_lazy: bool,
    ) -> Ps {
        let cpu = ctx.cpu;
        // The record exists from the first enqueue: a target may take its request (and ack it)
        // before the loop ends.
        let record = Shootdown {
            info,
            initiator: cpu,
            pending: targets.weight(),
            last_ack: Ps::ZERO,
            local_done: t0,
            batch,
        };
        let sd = match self.smp.free_shootdowns.pop() {
            Some(sd) => {
                self.smp.shootdowns[sd] = record;
                sd
            }
            None => {
                self.smp.shootdowns.push(record);
                self.smp.shootdowns.len() - 1
            }
        };
        let coalesce = self.config.flush.coalesce_ipis.coalesces(targets.weight());
        let l = SendLoop { sd, left: *targets, ipis: CpuMask::new(), post_local, coalesce, skip_lazy };
        self.cpus[cpu as usize].sending = Some(Box::new(l));
        self.send_loop(ctx, t0)
    }

    /// The initiator's wait at an operation boundary (`csd_lock_wait` on each request, then its
    /// own flush): `None` once every acknowledgement and its own flush are in, the shootdown's
    /// slot freed; otherwise keep spinning, or wait until the last of them lands.
    pub(in crate::linux) fn csd_wait(&mut self, ctx: &Ctx) -> Option<Boundary> {
        let ci = ctx.cpu as usize;
        let sd = self.cpus[ci].waiting?;
        let s = self.smp.shootdowns[sd];
        if s.pending > 0 {
            return Some(Boundary::Spin); // keep spinning; an ack or an IPI will wake us
        }
        let resume = s.last_ack.max(s.local_done);
        if resume > ctx.now {
            return Some(Boundary::At(resume));
        }
        self.cpus[ci].waiting = None;
        self.smp.free_shootdowns.push(sd);
        None
    }

    /// The `Smp` continuation: the rest of an enqueue loop after an interrupt.
    pub(in crate::linux) fn smp_step(&mut self, ctx: &mut Ctx, _t: usize, s: Step) -> Ps {
        match s {
            Step::Send => self.send_loop(ctx, ctx.now),
        }
    }

    /// The enqueue loop of [`Kernel::call_function_many`] from where it stands, at `t0`. It runs
    /// with interrupts enabled (`smp_call_function_many_cond` warns if they are off): an IPI
    /// arriving before the next enqueue stops the loop there, the engine takes it, and a
    /// continuation goes on after the handler. The sender waits once every request is queued
    /// and the IPIs are sent. Charges the sends (and the local flush); returns their time.
    pub(in crate::linux) fn send_loop(&mut self, ctx: &mut Ctx, t0: Ps) -> Ps {
        let cpu = ctx.cpu;
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let ipi = self.costs.hw.ipi.expect("a machine with several CPUs has IPI costs");
        let mut l = self.cpus[cpu as usize].sending.take().expect("a send loop to go on with");
        let coalesce = l.coalesce;
        let mut send = Ps::ZERO;
        while let Some(t) = l.left.first() {
            if ctx.irq_by(t0 + send) {
                self.counters.smp.send_loops_interrupted += 1;
                self.cpus[cpu as usize].sending = Some(l);
                ctx.then(Continuation::Smp(Step::Send));
                ctx.charge(Bucket::IpiSend, send);
                return send;
            }
            if l.skip_lazy {
                // The target's state when the loop reaches it: first let every other CPU's
                // earlier event run (a CPU that blocks meanwhile goes idle, so lazy).
                let at = t0 + send;
                if at > ctx.now && ctx.others_before(at) {
                    self.counters.smp.send_loop_yields += 1;
                    self.cpus[cpu as usize].sending = Some(l);
                    ctx.then(Continuation::Smp(Step::Send));
                    ctx.charge(Bucket::IpiSend, send);
                    return send;
                }
                if !self.tlb_is_not_lazy(t) {
                    l.left.clear(t);
                    self.counters.smp.lazy_skipped_in_loop += 1;
                    self.smp.shootdowns[l.sd].pending -= 1;
                    continue;
                }
            }
            l.left.clear(t);
            let q = &mut self.smp.csqs[t as usize];
            let csd = lines.transfer(topo.distance(cpu, t));
            let head = q.head.rmw(cpu, t0 + send + csd, &topo, &lines);
            send += csd + head;
            self.cpus[cpu as usize].stall += csd + head; // Kernel::stall, `q` borrowed
            let at = t0 + send;
            if q.entries.is_empty() || !coalesce {
                l.ipis.set(t);
            }
            // Senders run in step order, not enqueue order: keep the queue sorted by time.
            let csd = Csd { at, shootdown: l.sd as u32, coalesced: coalesce };
            if q.entries.back().is_none_or(|b| b.at <= at) {
                q.entries.push_back(csd);
            } else {
                let i = q.entries.partition_point(|e| e.at <= at);
                q.entries.insert(i, csd);
            }
        }
        let mut fan = std::mem::take(&mut self.smp.fan);
        let (busy, _) = ipi.fanout_into(&l.ipis, &topo, &mut fan);
        let icr_t0 = t0 + send;
        send += busy;
        for &(t, at) in &fan {
            self.send_ipi(ctx, t, icr_t0 + at);
        }
        self.smp.fan = fan;
        ctx.charge(Bucket::IpiSend, send);
        let info = self.smp.shootdowns[l.sd].info;
        let loaded_here = self.cpus[cpu as usize].x86.st.loaded_mm == Some(info.mm);
        let post =
            if l.post_local && loaded_here { self.run_flush_func(cpu, t0 + send, &info) } else { Ps::ZERO };
        ctx.charge(Bucket::FlushWork, post);
        self.smp.shootdowns[l.sd].local_done = t0 + send + post;
        self.cpus[cpu as usize].waiting = Some(l.sd);
        send + post
    }
}
