//! The simulated machine's clock and control: which CPU does what next, in time order.
//!
//! Each CPU executes one step at a time (a user access, one phase of a system call or fault,
//! one part of an IPI handler); a step takes simulated time and ends at an operation boundary,
//! where pending interrupts are taken (docs/design.md#engine). A CPU spinning for shootdown
//! acknowledgements takes interrupts at once (Linux waits with interrupts enabled).
//!
//! The engine keeps the agenda, each CPU's interrupt arrivals and step time, its queue of kernel
//! continuations and its attribution buckets, and each task's program; everything else, the
//! mechanism and its state, is the kernel's ([`crate::linux`]), which it reaches only through
//! [`Ctx`]. A step is: take a pending interrupt (`Kernel::interrupt`), else ask the kernel what
//! the CPU does at this boundary (`Kernel::boundary`), else run the task's next continuation or
//! program operation (`Kernel::step`).

use std::collections::VecDeque;

use super::noise::{self, Noise};
use super::queue::Agenda;
use super::timeline::{Recorder, Recording, StepKind, TimelineSpec};
use crate::attribution::{Bucket, CpuTime, NR_BUCKETS};
use crate::hw::smt::Smt;
use crate::linux::config::{KernelConfig, Knobs};
use crate::linux::ctx::{Ctx, Engine};
use crate::linux::include::linux::mm_types::MmId;
use crate::linux::syscalls::{Op, Program};
use crate::linux::Counters;
use crate::linux::{Boundary, Continuation, Kernel};
use crate::profile::MachineProfile;
use crate::time::Ps;

/// A CPU's event timing.
#[derive(Debug, Clone, Default)]
struct CpuRun {
    /// Interrupts on their way, by arrival time (ascending; rarely more than one).
    arrivals: Vec<Ps>,
    /// An interrupt has arrived and is not taken yet. Like the APIC's IRR bit for the vector,
    /// a second arrival before it is taken merges into it.
    irq_pending: bool,
    /// The pending step event, if any.
    step_at: Option<Ps>,
    /// End of the CPU's last step: nothing new starts before it.
    busy_until: Ps,
    /// The CPU's next scheduler tick, if the machine has ticks.
    tick_at: Option<Ps>,
    /// A tick has arrived and is not taken yet.
    tick_pending: bool,
    /// The current step runs with interrupts enabled ([`Ctx::irqs_on`]).
    irqs_on: bool,
    /// What remains of an interrupted step: it runs once the interrupt has been handled.
    resume: Option<Ps>,
    /// The step under way, `(start, end)`, if it runs with interrupts enabled: an IPI sent to
    /// arrive inside it cuts it there.
    irq_step: Option<(Ps, Ps)>,
    /// Of the last step's time, the part (ppm) in which the CPU did not issue: memory stalls
    /// and waits. Its SMT siblings share the core with it for the rest (hw/smt.rs).
    idle_ppm: i64,
}

/// The agenda and every CPU's timing: what the kernel may ask about and change ([`Engine`]).
struct Events {
    run: Vec<CpuRun>,
    agenda: Agenda,
}

impl Events {
    fn schedule(&mut self, cpu: u32, at: Ps) {
        let c = &mut self.run[cpu as usize];
        let at = at.max(c.busy_until);
        if c.step_at.is_none_or(|t| at < t) {
            c.step_at = Some(at);
            self.requeue(cpu);
        }
    }

    /// Puts `cpu`'s next event (its next step or the next interrupt arrival) on the agenda.
    fn requeue(&mut self, cpu: u32) {
        let c = &self.run[cpu as usize];
        // The earliest of the three (written out: the iterator form is a hot spot).
        let min = |a: Option<Ps>, b: Option<Ps>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) | (None, x) => x,
        };
        let next = min(min(c.step_at, c.arrivals.first().copied()), c.tick_at);
        if self.agenda.get(cpu) != next {
            self.agenda.set(cpu, next);
        }
    }
}

impl Engine for Events {
    fn send_ipi(&mut self, cpu: u32, at: Ps) {
        let c = &mut self.run[cpu as usize];
        let i = c.arrivals.partition_point(|&t| t <= at);
        c.arrivals.insert(i, at);
        if let Some((start, end)) = c.irq_step {
            if at > start && at < end {
                // The step (already run whole) is cut at the arrival: the handler runs then,
                // and the rest of the step after it.
                c.irq_step = None;
                c.resume = Some(end - at);
                c.busy_until = at;
                c.step_at = Some(at);
            }
        }
        self.requeue(cpu);
    }

    fn kick(&mut self, cpu: u32, at: Ps) {
        self.schedule(cpu, at);
    }

    fn stepping(&self, cpu: u32) -> bool {
        self.run[cpu as usize].step_at.is_some()
    }

    fn first_other(&self, cpu: u32) -> Option<(Ps, u32)> {
        self.agenda.first_excluding(cpu)
    }

    fn next_arrival(&self, cpu: u32) -> Option<Ps> {
        self.run[cpu as usize].arrivals.first().copied()
    }

    fn irq_pending(&self, cpu: u32) -> bool {
        self.run[cpu as usize].irq_pending
    }

    fn irqs_on(&mut self, cpu: u32) {
        self.run[cpu as usize].irqs_on = true;
    }
}

/// A task's user side: its program and the loop iterations it completed.
struct Task {
    program: Box<dyn Program>,
    iterations: u64,
    measured: u64,
    /// The operations of the program's last `next`, taken in order from `taken` on.
    buf: Vec<Op>,
    taken: usize,
}

/// Host bytes of one task's user side in the engine (its program's own state apart).
pub const TASK_HOST_BYTES: u64 = std::mem::size_of::<Task>() as u64;

/// The result of one simulation run (before it is wrapped with its configuration).
#[derive(Debug, Clone)]
pub struct RunStats {
    /// Loop iterations per task inside the measured interval.
    pub iterations: Vec<u64>,
    pub measured: Ps,
    /// Every subsystem's counters over the measured interval (the optional groups where booted).
    pub counters: Counters,
    /// Per CPU, time by bucket, inside the measured interval.
    pub attribution: Vec<[Ps; NR_BUCKETS]>,
}

/// Counters and per-CPU attribution at one instant.
struct Snapshot {
    counters: Counters,
    times: Vec<[Ps; NR_BUCKETS]>,
}

pub struct Simulation {
    pub kernel: Kernel,
    ev: Events,
    /// Per CPU, the kernel continuations queued.
    steps: Vec<VecDeque<Continuation>>,
    /// Per CPU, time by bucket.
    times: Vec<CpuTime>,
    tasks: Vec<Task>,
    /// The timeline the last run recorded.
    recording: Option<Recording>,
    noise: Noise,
    /// How SMT siblings share a core (hw/smt.rs); `None` without SMT.
    smt: Option<Smt>,
    /// The timeline being recorded (`tlblab run --timeline`), if asked for: read at each step,
    /// it changes nothing the run computes.
    timeline: Option<Box<Recorder>>,
}

impl Simulation {
    pub fn new(profile: &MachineProfile, config: KernelConfig) -> Simulation {
        let kernel = Kernel::boot(profile, config);
        let n = kernel.nr_cpus();
        Simulation {
            kernel,
            ev: Events { run: vec![CpuRun::default(); n as usize], agenda: Agenda::new(n) },
            steps: vec![VecDeque::new(); n as usize],
            times: vec![CpuTime::default(); n as usize],
            tasks: Vec::new(),
            recording: None,
            noise: Noise::new(profile, n, 0),
            smt: profile.topology.smt_throughput.as_ref().and_then(|t| {
                Smt::new(crate::hw::topology::Topology::from_profile(&profile.topology), t.value)
            }),
            timeline: None,
        }
    }

    /// Seeds the machine's noise (the tick phase, each CPU's cost jitter) for run `seed`.
    pub fn seed(&mut self, seed: u64) {
        self.noise.seed(self.cpus(), seed);
        self.kernel.seed_fs(seed);
        self.kernel.seed_jiffies(seed, self.noise.tick());
        self.kernel.seed_memcg_stats(seed);
    }

    pub fn cpus(&self) -> u32 {
        self.kernel.nr_cpus()
    }

    /// A new, empty address space.
    pub fn add_mm(&mut self) -> MmId {
        self.kernel.add_mm()
    }

    /// Maps `len` bytes of populated anonymous memory in `mm` at no simulated time (see
    /// [`Kernel::map_populated`]). Returns the start address.
    pub fn map_populated(&mut self, mm: MmId, len: u64) -> u64 {
        self.kernel.map_populated(mm, len)
    }

    /// `mmap(MAP_SHARED | MAP_ANONYMOUS)` of `len` bytes in `mm` and a `memset` of it to `byte`,
    /// untimed (linux/mm/shmem.rs): returns the start.
    pub fn map_shmem_filled(&mut self, mm: MmId, len: u64, byte: u8) -> u64 {
        self.kernel.map_shmem_filled(mm, len, byte)
    }

    /// A tmpfs file of `pages` pages, untimed (linux/mm/shmem.rs): `cached`, every page
    /// written already, else none. Returns its id.
    pub fn add_tmpfs_file(&mut self, pages: u64, cached: bool) -> u32 {
        self.kernel.tmpfs_file_untimed(pages, cached)
    }

    /// `pipe()`: a new, empty pipe (linux/fs/pipe.rs); returns its id for `Op::PipeRead/PipeWrite`.
    pub fn add_pipe(&mut self) -> u32 {
        self.kernel.add_pipe()
    }

    /// `socketpair(AF_UNIX, SOCK_STREAM)` (linux/net/unix/af_unix.rs); returns its id for
    /// `Op::UnixSend/UnixRecv`.
    pub fn add_unix_pair(&mut self) -> u32 {
        self.kernel.add_unix_pair()
    }

    /// Puts the file system's directories on tmpfs (linux/fs/namei.rs `FsKind`); before `add_dir`.
    pub fn mount_tmpfs(&mut self) {
        self.kernel.mount_tmpfs()
    }

    /// An empty directory (linux/fs/namei.rs); returns its id for `Op::FsCreate/FsMkdirExists`.
    pub fn add_dir(&mut self) -> u32 {
        self.kernel.add_dir()
    }

    /// Runs kernel code outside simulated time ([`Kernel::untimed`]): a workload's setup
    /// building the steady state its run starts from. `f` sets `ctx.cpu` to the CPU each call
    /// runs on (0 at first); what the calls charge is dropped; none may sleep or queue a step.
    pub fn untimed<R>(&mut self, f: impl FnOnce(&mut Kernel, &mut Ctx) -> R) -> R {
        let mut times = CpuTime::default();
        let mut steps = VecDeque::new();
        let mut ctx = Ctx::new(0, Ps::ZERO, &mut times, &mut steps, &mut self.ev);
        let r = self.kernel.untimed(|k| f(k, &mut ctx));
        assert!(steps.is_empty(), "an untimed setup call slept or queued a step");
        r
    }

    /// The tasks added so far (the next task's id).
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Binds a task running `program` in `mm` to `cpu`, starting at time 0.
    pub fn add_task(&mut self, program: Box<dyn Program>, mm: MmId, cpu: u32) {
        self.add_task_at(program, mm, cpu, Ps::ZERO);
    }

    /// As `add_task`, starting at `start` (a task added to a busy CPU waits for a time slice).
    pub fn add_task_at(&mut self, program: Box<dyn Program>, mm: MmId, cpu: u32, start: Ps) {
        self.add(program, Some(mm), cpu, start);
    }

    /// Lets task `t` run on any CPU: each wake-up places it (`select_task_rq_fair`,
    /// linux/kernel/sched/fair/select.rs) instead of keeping it on the CPU it was added on.
    pub fn unbind_task(&mut self, t: usize) {
        self.kernel.tasks[t].bound = false;
    }

    /// Gives task `t` the `SCHED_BATCH` policy (`chrt -b 0`): its wake-ups do not preempt.
    pub fn set_batch(&mut self, t: usize) {
        self.kernel.tasks[t].batch = true;
    }

    /// Binds a kernel thread (no mm of its own: it runs lazily on the mm it finds,
    /// linux/kernel/sched/core.rs) running `program` to `cpu`, starting at time 0. Returns its task
    /// number.
    pub fn add_kthread(&mut self, program: Box<dyn Program>, cpu: u32) -> usize {
        self.add(program, None, cpu, Ps::ZERO);
        self.tasks.len() - 1
    }

    fn add(&mut self, program: Box<dyn Program>, mm: Option<MmId>, cpu: u32, start: Ps) {
        self.tasks.push(Task { program, iterations: 0, measured: 0, buf: Vec::new(), taken: 0 });
        if self.kernel.add_task(mm, cpu, start) {
            self.ev.run[cpu as usize].busy_until = start;
        }
    }

    /// The kernel and a step context on `cpu` at `now`.
    fn split(&mut self, cpu: u32, now: Ps) -> (&mut Kernel, Ctx<'_>) {
        let ci = cpu as usize;
        let log = self.timeline.as_deref_mut().map(|r| &mut r.log);
        let ctx = Ctx::new(cpu, now, &mut self.times[ci], &mut self.steps[ci], &mut self.ev);
        (&mut self.kernel, ctx.with_log(log))
    }

    /// Records the next [`Self::run`]'s timeline (engine/timeline.rs).
    pub fn record_timeline(&mut self, spec: TimelineSpec) {
        self.timeline = Some(Box::new(Recorder::new(spec)));
    }

    /// The timeline the last run recorded, if one was asked for.
    pub fn take_timeline(&mut self) -> Option<Recording> {
        self.recording.take()
    }

    /// Tells the recorder, if any, what kind of step runs next.
    #[inline]
    fn step_kind(&mut self, kind: StepKind) {
        if let Some(r) = self.timeline.as_deref_mut() {
            r.kind = kind;
        }
    }

    /// Runs until `warmup + measure`; statistics cover `[warmup, warmup + measure)`.
    pub fn run(&mut self, warmup: Ps, measure: Ps) -> RunStats {
        let tick = self.noise.tick();
        for cpu in 0..self.cpus() {
            self.ev.run[cpu as usize].tick_at = tick.map(|(_, first)| first);
            if self.kernel.has_task(cpu) {
                self.ev.schedule(cpu, Ps::ZERO);
            }
            self.ev.requeue(cpu);
        }
        let end = warmup + measure;
        self.kernel.memcg_stats_start();
        if let Some(r) = self.timeline.as_deref_mut() {
            r.start(&self.kernel, warmup, end);
        }
        let mut snap: Option<Snapshot> = None;
        while let Some((now, cpu)) = self.ev.agenda.first() {
            if now >= end {
                break;
            }
            if snap.is_none() && now >= warmup {
                snap = Some(self.snapshot(warmup));
            }
            let c = &mut self.ev.run[cpu as usize];
            if c.arrivals.first() == Some(&now) {
                // An arrival is noted before a step at the same instant, so that step takes it.
                c.arrivals.remove(0);
                c.irq_pending = true;
                if c.step_at.is_none() {
                    self.ev.schedule(cpu, now);
                }
            } else if c.tick_at == Some(now) {
                // Busy CPUs take the tick; an idle one has it stopped (NO_HZ_IDLE).
                c.tick_at = tick.map(|(period, _)| now + period);
                if self.kernel.has_task(cpu) || self.kernel.waiting(cpu) {
                    c.tick_pending = true;
                    if c.step_at.is_none() {
                        self.ev.schedule(cpu, now);
                    }
                }
            } else {
                c.step_at = None;
                self.step(cpu, now, warmup, end);
            }
            self.ev.requeue(cpu);
        }
        let start = snap.unwrap_or_else(|| self.snapshot(warmup));
        let end_snap = self.snapshot(end);
        if let Some(r) = self.timeline.take() {
            self.recording = Some(r.finish(&self.kernel, end));
        }
        RunStats {
            iterations: self.tasks.iter().map(|t| t.measured).collect(),
            measured: measure,
            counters: end_snap.counters.minus(&start.counters),
            attribution: end_snap
                .times
                .iter()
                .zip(&start.times)
                .map(|(e, s)| std::array::from_fn(|i| e[i] - s[i]))
                .collect(),
        }
    }

    /// Counters and attribution as of `at`: CPUs idle or spinning at `at` are charged up to it
    /// (so buckets only ever grow and window differences are exact up to one step).
    fn snapshot(&mut self, at: Ps) -> Snapshot {
        for cpu in 0..self.cpus() {
            self.charge_gap(cpu, at);
        }
        Snapshot { counters: self.kernel.counters(), times: self.times.iter().map(|t| t.by_bucket).collect() }
    }

    /// Charges the time since the CPU's last step up to `now`: spinning on a shootdown, or idle.
    fn charge_gap(&mut self, cpu: u32, now: Ps) {
        let c = &mut self.ev.run[cpu as usize];
        if c.busy_until < now {
            let b = if self.kernel.waiting(cpu) {
                crate::attribution::Bucket::IpiWait
            } else {
                crate::attribution::Bucket::Idle
            };
            self.times[cpu as usize].by_bucket[b as usize] += now - c.busy_until;
            c.busy_until = now;
        }
    }

    fn step(&mut self, cpu: u32, now: Ps, warmup: Ps, end: Ps) {
        if let Some(r) = self.timeline.as_deref_mut() {
            let c = &self.ev.run[cpu as usize];
            r.begin_step(cpu, now, c.resume, c.busy_until < now && self.kernel.waiting(cpu));
        }
        self.charge_gap(cpu, now);
        let c = &mut self.ev.run[cpu as usize];
        if !c.irq_pending && !c.tick_pending && !self.kernel.in_irq(cpu) {
            if let Some(rest) = c.resume.take() {
                // The interrupted step goes on; its time is charged already.
                if let Some(r) = self.timeline.as_deref_mut() {
                    r.resume(&self.kernel, cpu, now, rest);
                }
                self.end_step(cpu, now, rest, true);
                return;
            }
        }
        // The buckets before the step, copied only when there is jitter or a sibling's share
        // to spread over them.
        let t = &mut self.times[cpu as usize];
        t.step_mask = 0;
        let before = (self.noise.jitters() || self.smt.is_some()).then_some(t.by_bucket);
        let recorded = self.timeline.is_some().then_some(t.by_bucket);
        self.kernel.take_stall(cpu);
        if let Some(d) = self.run_step(cpu, now, warmup, end) {
            let d = match &before {
                Some(b) => {
                    let (d, f) = self.jitter(cpu, b, d);
                    // The step's memory stalls, stretched by the jitter as its buckets were.
                    let stall = self.kernel.take_stall(cpu);
                    let stall = Ps((stall.0 as i64 + noise::extra(stall, f)) as u64);
                    self.share_core(cpu, now, b, d, stall)
                }
                None => d,
            };
            if let (Some(r), Some(b)) = (self.timeline.as_deref_mut(), &recorded) {
                let ci = cpu as usize;
                let idle_queue = self.steps[ci].is_empty();
                r.end_step(&self.kernel, cpu, now, d, b, &self.times[ci].by_bucket, idle_queue);
            }
            let irqs_on = std::mem::take(&mut self.ev.run[cpu as usize].irqs_on);
            self.end_step(cpu, now, d, irqs_on);
        }
    }

    /// Ends the step that started at `now` and takes `d`. With interrupts enabled, an IPI or a
    /// tick (on a busy CPU) arriving inside it interrupts it there: the step ends at the arrival
    /// and what remains of it runs after the handler (docs/design.md#engine). An IPI
    /// sent later to arrive inside it cuts it the same way (`Events::send_ipi`).
    fn end_step(&mut self, cpu: u32, now: Ps, d: Ps, irqs_on: bool) {
        let c = &mut self.ev.run[cpu as usize];
        c.irq_step = None;
        let end = now + d;
        if irqs_on {
            let inside = |t: &Ps| *t > now && *t < end;
            let ipi = c.arrivals.first().copied().filter(inside);
            let tick = c.tick_at.filter(inside).filter(|_| self.kernel.has_task(cpu));
            if let Some(at) = ipi.into_iter().chain(tick).min() {
                c.resume = Some(end - at);
                self.finish_step(cpu, at);
                return;
            }
            c.irq_step = Some((now, end));
        }
        self.finish_step(cpu, end);
    }

    /// Runs one step on `cpu`: an interrupt (the call-function IPI before the tick, as their
    /// vectors' priorities order them: arch/x86/include/asm/irq_vectors.h), else the boundary's
    /// work, else the next continuation or operation. Returns its time, or `None` if the CPU
    /// did not step (it spins, idles, or waits until a later time).
    fn run_step(&mut self, cpu: u32, now: Ps, warmup: Ps, end: Ps) -> Option<Ps> {
        let ci = cpu as usize;
        let in_irq = self.kernel.in_irq(cpu);
        if in_irq || self.ev.run[ci].irq_pending {
            if !in_irq {
                self.ev.run[ci].irq_pending = false;
            }
            self.step_kind(if in_irq { StepKind::Irq } else { StepKind::IrqEntry });
            let (k, mut ctx) = self.split(cpu, now);
            return Some(k.interrupt(&mut ctx, !in_irq));
        }
        if self.ev.run[ci].tick_pending {
            self.ev.run[ci].tick_pending = false;
            self.step_kind(StepKind::Tick);
            let (k, mut ctx) = self.split(cpu, now);
            return Some(k.tick(&mut ctx));
        }
        self.step_kind(StepKind::Boundary);
        let (k, mut ctx) = self.split(cpu, now);
        let t = match k.boundary(&mut ctx) {
            Boundary::Spin | Boundary::Idle => return None,
            Boundary::At(at) => {
                self.ev.schedule(cpu, at);
                return None;
            }
            Boundary::Ran(d) => return Some(d),
            Boundary::Task(t) => t,
        };
        let step = match self.steps[ci].pop_front() {
            Some(s) => s,
            None => {
                let task = &mut self.tasks[t];
                if task.taken == task.buf.len() {
                    task.buf.clear();
                    task.taken = 0;
                    task.program.next(&mut task.buf);
                }
                let op = *task.buf.get(task.taken).expect("a program always has a next operation");
                task.taken += 1;
                if matches!(op, Op::Iteration) {
                    task.iterations += 1;
                    if now >= warmup && now < end {
                        task.measured += 1;
                    }
                    self.ev.schedule(cpu, now);
                    return None;
                }
                Continuation::User(op)
            }
        };
        self.step_kind(StepKind::Task(t, step));
        let (k, mut ctx) = self.split(cpu, now);
        Some(k.step(&mut ctx, t, step))
    }

    /// Scales the step that took `d` and charged its buckets from `before` on by this CPU's
    /// next jitter factor (engine/noise.rs): each bucket's share grows or shrinks alike.
    /// Returns the new length and the factor (ppm).
    fn jitter(&mut self, cpu: u32, before: &[Ps; NR_BUCKETS], d: Ps) -> (Ps, i64) {
        if !self.noise.jitters() {
            return (d, noise::UNIT);
        }
        let f = self.noise.factor_ppm(cpu);
        (self.scale(cpu, before, d, f, |_| true), f)
    }

    /// Stretches the step that started at `now` by the share of the core its SMT siblings take
    /// (hw/smt.rs): a sibling counts while it is inside a step of its own (not spinning, not
    /// idle), for the part of that step it issues. Only execution stretches: waits for
    /// acknowledgements, a lock or DRAM are not scaled, nor the step's `stall` on memory (cache
    /// line transfers, `Kernel::stall`), which is charged inside the execution buckets and is
    /// taken out of them here (docs/references/machine-costs.md#smt-sharing).
    fn share_core(&mut self, cpu: u32, now: Ps, before: &[Ps; NR_BUCKETS], d: Ps, stall: Ps) -> Ps {
        let Some(smt) = &self.smt else { return d };
        const WAITS: [usize; 4] = [
            Bucket::IpiWait as usize,
            Bucket::LockWait as usize,
            Bucket::MemWait as usize,
            Bucket::Idle as usize,
        ];
        let scaled = |b: usize| !WAITS.contains(&b);
        // Only the buckets this step charged moved (`CpuTime::step_mask`): the others add 0.
        let waits: u32 = WAITS.iter().fold(0, |m, &b| m | 1 << b);
        let work_of = |t: &CpuTime| {
            let mut mask = t.step_mask & !waits;
            let mut work = 0u64;
            while mask != 0 {
                let b = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                work += (t.by_bucket[b] - before[b]).0;
            }
            work
        };
        let work = work_of(&self.times[cpu as usize]);
        let stall = stall.0.min(work);
        let run = &self.ev.run;
        let issuing = |sib: u32| {
            let s = &run[sib as usize];
            if s.busy_until > now {
                noise::UNIT - s.idle_ppm
            } else {
                0
            }
        };
        let f = smt.stretch_ppm(cpu, issuing, || crate::hw::smt::ppm_of(stall, work));
        let d = self.scale(cpu, before, d, f, scaled);
        // What this step leaves its siblings: the core, but for its stalls and waits (the
        // buckets as scaled; unscaled, as they were).
        let work = if f == noise::UNIT { work } else { work_of(&self.times[cpu as usize]) };
        self.ev.run[cpu as usize].idle_ppm = noise::UNIT - crate::hw::smt::ppm_of(work - stall, d.0);
        d
    }

    /// Scales what the step that took `d` charged to each bucket `which` accepts since `before`
    /// by `f` (ppm), and the step with it.
    fn scale(
        &mut self,
        cpu: u32,
        before: &[Ps; NR_BUCKETS],
        d: Ps,
        f: i64,
        which: impl Fn(usize) -> bool,
    ) -> Ps {
        if f == noise::UNIT {
            return d;
        }
        let mut extra = 0i64;
        let time = &mut self.times[cpu as usize];
        let mut mask = time.step_mask; // the buckets this step charged
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let (t, b) = (&mut time.by_bucket[i], before[i]);
            if *t == b || !which(i) {
                continue; // nothing charged to this bucket (or not one to scale)
            }
            let x = noise::extra(*t - b, f);
            *t = Ps((t.0 as i64 + x) as u64);
            extra += x;
        }
        Ps((d.0 as i64 + extra).max(0) as u64)
    }

    /// Ends a step at `at`: the CPU continues then, unless it now spins on a shootdown.
    fn finish_step(&mut self, cpu: u32, at: Ps) {
        self.ev.run[cpu as usize].busy_until = at;
        let c = &self.ev.run[cpu as usize];
        if !self.kernel.spinning(cpu) || c.irq_pending || c.tick_pending || c.resume.is_some() {
            self.ev.schedule(cpu, at);
        }
    }

    /// The flush knobs in force, with a table-derived shift resolved for this machine.
    pub fn effective_knobs(&self) -> Knobs {
        self.kernel.effective_knobs()
    }

    /// Violations found and the first few, described.
    pub fn oracle_report(&self) -> (u64, Vec<String>) {
        self.kernel.oracle_report()
    }

    /// Runs `f` on the kernel with a context on `cpu` at `now`, outside any step (tests drive
    /// single kernel paths this way).
    #[cfg(test)]
    fn with_ctx<R>(&mut self, cpu: u32, now: Ps, f: impl FnOnce(&mut Kernel, &mut Ctx) -> R) -> R {
        let (k, mut ctx) = self.split(cpu, now);
        f(k, &mut ctx)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_broadcast;
#[cfg(test)]
mod tests_lazy;
#[cfg(test)]
mod tests_madvise;
#[cfg(test)]
mod tests_noise;
#[cfg(test)]
mod tests_smt;
#[cfg(test)]
mod tests_uncore;
#[cfg(test)]
mod tests_vma;
