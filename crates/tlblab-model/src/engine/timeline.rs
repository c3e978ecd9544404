//! A timeline of a simulated run (`tlblab run --timeline`): what each CPU did and when, taken
//! from the points where the engine already accounts for time (docs/design.md#engine), not from
//! a second model of it.
//!
//! - A step's time is laid out as the kernel charged it: [`crate::linux::ctx::Ctx`] logs each
//!   charge in the order made (and a lock wait's lock) into a [`StepLog`]; the engine's cost
//!   noise and SMT share stretch each bucket's charges as they stretch the buckets.
//! - Between steps a CPU idles or spins for acknowledgements, as `Simulation::charge_gap` charges.
//! - A step cut by an interrupt (engine/sim.rs `end_step`, `Events::send_ipi`) is split where
//!   the interrupt came: its head before the handler, its rest after.
//! - Around the steps: the operation a task is in (a system call by name, a faulting access),
//!   the call-function interrupt from entry to exit, lazy TLB mode; each IPI's send is joined to
//!   the interrupt that takes it (several arrivals before it is taken merge into one, as the
//!   APIC merges them).
//! - Counters: each CPU's valid TLB entries per structure and its call-queue length; with reclaim
//!   modelled, the machine's file LRU lists (inactive, active), sampled once they moved by
//!   [`LRU_SAMPLE_PAGES`].
//!
//! Recording reads the kernel and the engine and changes neither: a run prints the same numbers
//! with and without it. Without it nothing is allocated; `Ctx` pays one branch a charge.

use crate::attribution::{Bucket, NR_BUCKETS};
use crate::linux::syscalls::Op;
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

/// The most events (slices, flows, counter samples) a timeline keeps unless told otherwise
/// (about 60 MB of JSON): past it the recording stops at the time it was reached.
pub const DEFAULT_MAX_EVENTS: usize = 500_000;

/// The file LRU lists are sampled again once their sizes moved by this many pages since the last
/// sample: a reclaim run changes them at every page, far past any event budget.
pub const LRU_SAMPLE_PAGES: u64 = 64;

/// One step's charges in the order the kernel made them, and the IPIs it sent.
#[derive(Debug, Default)]
pub struct StepLog {
    /// `(bucket, time, lock)`: `lock` names the lock of a lock wait.
    charges: Vec<(Bucket, Ps, Option<&'static str>)>,
    /// `(charges made before it, target, arrival)`.
    sends: Vec<(usize, u32, Ps)>,
}

impl StepLog {
    pub(crate) fn charge(&mut self, b: Bucket, d: Ps, lock: Option<&'static str>) {
        if d > Ps::ZERO {
            self.charges.push((b, d, lock));
        }
    }

    pub(crate) fn send(&mut self, target: u32, at: Ps) {
        self.sends.push((self.charges.len(), target, at));
    }

    fn clear(&mut self) {
        self.charges.clear();
        self.sends.clear();
    }
}

/// What a slice shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// Time charged to a bucket (and between steps: idle, or waiting for acknowledgements).
    Bucket(Bucket),
    /// Waiting for the named lock.
    Lock(&'static str),
    /// The operation a task is in: a system call by name, or an access that faulted.
    Op(&'static str),
    /// The call-function interrupt, entry to exit.
    Irq,
    /// Lazy TLB mode (`cpu_tlbstate_shared.is_lazy`).
    Lazy,
    /// A step's time beyond what it charged (none in the kernel as modelled; kept visible).
    Uncharged,
}

impl Label {
    /// The slice's name as a kernel developer reads it.
    pub fn name(&self) -> String {
        match self {
            Label::Bucket(b) => match b {
                Bucket::User => "user",
                Bucket::Walk => "page walk",
                Bucket::Syscall => "syscall entry/exit",
                Bucket::Fault => "page fault",
                Bucket::Zeroing => "zero/copy page",
                Bucket::FlushWork => "local TLB flush",
                Bucket::IpiSend => "IPI send (smp_call_function_many)",
                Bucket::IpiWait => "wait for acks (csd_lock_wait)",
                Bucket::Handler => "flush_tlb_func",
                Bucket::Sched => "schedule",
                Bucket::LockWait => "lock wait",
                Bucket::Tick => "tick",
                Bucket::Reclaim => "reclaim",
                Bucket::MemWait => "DRAM bandwidth wait",
                Bucket::Idle => "idle",
            }
            .to_string(),
            Label::Lock(l) => format!("lock wait: {l}"),
            Label::Op(o) => o.to_string(),
            Label::Irq => "call-function IPI".to_string(),
            Label::Lazy => "lazy TLB mode".to_string(),
            Label::Uncharged => "kernel (uncharged)".to_string(),
        }
    }

    /// The slice's category: its attribution bucket's name, or what encloses.
    pub fn category(&self) -> &'static str {
        match self {
            Label::Bucket(b) => b.name(),
            Label::Lock(_) => Bucket::LockWait.name(),
            Label::Op(_) => "op",
            Label::Irq => "irq",
            Label::Lazy => "lazy",
            Label::Uncharged => "uncharged",
        }
    }
}

/// How deep a slice nests: lazy mode holds operations, which hold interrupts, which hold the
/// time of the steps.
pub const LAZY: u8 = 0;
pub const OP: u8 = 1;
pub const IRQ: u8 = 2;
pub const STEP: u8 = 3;

/// A closed interval of one CPU's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub cpu: u32,
    pub start: Ps,
    pub end: Ps,
    pub depth: u8,
    pub label: Label,
}

/// An IPI: sent at `from` on `from_cpu`, taken by the interrupt at `to` on `to_cpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub id: u64,
    pub from_cpu: u32,
    pub from: Ps,
    pub to_cpu: u32,
    pub to: Ps,
}

/// A counter's new value on a CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sample {
    /// Valid TLB entries per structure (in [`CpuInfo::tlb_names`] order).
    TlbEntries { cpu: u32, at: Ps, per_structure: Vec<u64> },
    /// Requests on the CPU's `call_single_queue`.
    CallQueue { cpu: u32, at: Ps, len: u64 },
    /// Pages on the machine's inactive and active file LRU lists (every zone's).
    FileLru { at: Ps, inactive: u64, active: u64 },
}

/// Where a CPU sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuInfo {
    pub socket: u32,
    pub core: u32,
    pub tlb_names: Vec<String>,
}

/// What to record: the window (from the start of the measured interval, as results count
/// time) and the most events to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineSpec {
    pub window: Option<(Ps, Ps)>,
    pub max_events: usize,
}

impl Default for TimelineSpec {
    fn default() -> Self {
        TimelineSpec { window: None, max_events: DEFAULT_MAX_EVENTS }
    }
}

/// A recorded timeline: every slice closed and inside the window, every flow with both ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// The simulated time shown as zero: the start of the measured interval.
    pub origin: Ps,
    /// The window kept, in simulated time (after a truncation, its end is where it stopped).
    pub window: (Ps, Ps),
    /// The event cap was reached: the window ends where it was.
    pub truncated: bool,
    pub cpus: Vec<CpuInfo>,
    /// In time order (a slice before those it encloses).
    pub slices: Vec<Slice>,
    pub flows: Vec<Flow>,
    pub samples: Vec<Sample>,
}

/// What kind of step the engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Taking a pending interrupt (`Kernel::interrupt` with `new`).
    IrqEntry,
    /// The handler going on.
    Irq,
    Tick,
    /// Work at an operation boundary (a context switch, a deferred flush).
    Boundary,
    /// Task `t`'s continuation or operation.
    Task(usize, Continuation),
}

/// What a step leaves behind once it is over.
#[derive(Debug, Clone, Copy, Default)]
struct Post {
    close_op: bool,
    close_irq: bool,
    lazy: bool,
}

/// A step laid out in time, not yet final: an interrupt may still cut it.
#[derive(Debug, Clone, Default)]
struct Pending {
    start: Ps,
    end: Ps,
    segs: Vec<(Ps, Ps, Label)>,
    /// Sends in it: `(time, flow index)`.
    flows: Vec<(Ps, usize)>,
    post: Post,
}

impl Pending {
    /// Splits at `at`: the head stays, the tail is returned with times from zero.
    fn cut(&mut self, at: Ps) -> Pending {
        let at = at.clamp(self.start, self.end);
        let mut tail = Pending { start: Ps::ZERO, end: self.end - at, post: self.post, ..Default::default() };
        let mut head = Vec::new();
        for &(s, e, l) in &self.segs {
            if e <= at {
                head.push((s, e, l));
            } else if s >= at {
                tail.segs.push((s - at, e - at, l));
            } else {
                head.push((s, at, l));
                tail.segs.push((Ps::ZERO, e - at, l));
            }
        }
        let (h, t): (Vec<_>, Vec<_>) = self.flows.iter().partition(|(ts, _)| *ts < at);
        tail.flows = t.into_iter().map(|(ts, i)| (ts - at, i)).collect();
        self.flows = h;
        self.segs = head;
        self.end = at;
        tail
    }

    fn shifted(mut self, by: Ps) -> Pending {
        self.start += by;
        self.end += by;
        self.segs.iter_mut().for_each(|(s, e, _)| (*s, *e) = (*s + by, *e + by));
        self.flows.iter_mut().for_each(|(ts, _)| *ts += by);
        self
    }
}

/// One CPU's recording state.
#[derive(Debug, Clone, Default)]
struct Track {
    pending: Option<Pending>,
    /// The rest of a step an interrupt cut, times from zero.
    remainder: Option<Pending>,
    /// Open slices by depth (lazy, op, irq).
    open: [Option<(Ps, Label)>; 3],
    /// The task whose operation is open.
    op_task: Option<usize>,
    lazy: bool,
    /// Where the CPU's recorded time ends.
    last_end: Ps,
    /// The last step slice, held to merge a contiguous one of the same label into it.
    held: Option<(Ps, Ps, Label)>,
    /// IPIs on their way here: `(arrival, flow index)`.
    incoming: Vec<(Ps, usize)>,
    queue: u64,
    tlb: Vec<u64>,
}

#[derive(Debug, Clone, Copy)]
struct FlowEnds {
    from_cpu: u32,
    from: Option<Ps>,
    to_cpu: u32,
    to: Option<Ps>,
}

/// The recorder the engine carries while a timeline is asked for.
#[derive(Debug)]
pub struct Recorder {
    spec: TimelineSpec,
    pub(crate) log: StepLog,
    /// What the next `end_step` is (set by the engine as it dispatches).
    pub(crate) kind: StepKind,
    tracks: Vec<Track>,
    /// Per task, the operation it is in.
    task_op: Vec<Option<&'static str>>,
    flows: Vec<FlowEnds>,
    out: Recording,
    events: usize,
    /// The time of the step being recorded.
    clock: Ps,
    scratch: Vec<u64>,
    /// The file LRU sizes last sampled.
    lru: Option<(u64, u64)>,
}

impl Recorder {
    pub fn new(spec: TimelineSpec) -> Recorder {
        Recorder {
            spec,
            log: StepLog::default(),
            kind: StepKind::Boundary,
            tracks: Vec::new(),
            task_op: Vec::new(),
            flows: Vec::new(),
            out: Recording::default(),
            events: 0,
            clock: Ps::ZERO,
            scratch: Vec::new(),
            lru: None,
        }
    }

    /// The run starts: `warmup` is the measured interval's start, `end` the run's.
    pub(crate) fn start(&mut self, k: &Kernel, warmup: Ps, end: Ps) {
        let (s, e) = self.spec.window.unwrap_or((Ps::ZERO, end - warmup));
        self.out.origin = warmup;
        self.out.window = ((warmup + s).min(end), (warmup + e).min(end));
        let n = k.nr_cpus();
        self.tracks = vec![Track::default(); n as usize];
        self.out.cpus = (0..n)
            .map(|c| {
                let (socket, core) = k.trace_place(c);
                CpuInfo { socket, core, tlb_names: k.trace_tlb_names(c) }
            })
            .collect();
        for c in 0..n {
            if k.trace_is_lazy(c) {
                self.tracks[c as usize].lazy = true;
                self.open(c, LAZY, Ps::ZERO, Label::Lazy);
            }
        }
    }

    /// `cpu` starts a step at `now`; `resume` is what remains of a step an interrupt cut (the
    /// engine's `CpuRun::resume`), `waiting` whether it spun for acknowledgements until now.
    pub(crate) fn begin_step(&mut self, cpu: u32, now: Ps, resume: Option<Ps>, waiting: bool) {
        self.clock = now;
        self.log.clear();
        let ci = cpu as usize;
        if let Some(rest) = resume {
            let t = &mut self.tracks[ci];
            if t.remainder.is_none() {
                if let Some(mut p) = t.pending.take() {
                    let tail = p.cut(Ps(p.end.0.saturating_sub(rest.0)));
                    self.tracks[ci].remainder = Some(tail);
                    self.commit(cpu, p, false);
                }
            }
        }
        if let Some(p) = self.tracks[ci].pending.take() {
            self.commit(cpu, p, true);
        }
        let from = self.tracks[ci].last_end;
        if now > from {
            let b = if waiting { Bucket::IpiWait } else { Bucket::Idle };
            self.seg(cpu, from, now, Label::Bucket(b));
            self.tracks[ci].last_end = now;
        }
    }

    /// The rest of a cut step runs from `now` for `rest`.
    pub(crate) fn resume(&mut self, k: &Kernel, cpu: u32, now: Ps, rest: Ps) {
        let t = &mut self.tracks[cpu as usize];
        let mut p = t.remainder.take().unwrap_or_else(|| Pending {
            end: rest,
            segs: vec![(Ps::ZERO, rest, Label::Uncharged)],
            ..Default::default()
        });
        p.post.lazy = k.trace_is_lazy(cpu);
        t.pending = Some(p.shifted(now));
    }

    /// The step of `cpu` that started at `now` took `d`; `before` and `after` are its buckets
    /// around it (cost noise included); `idle_queue`: no continuation is queued after it.
    pub(crate) fn end_step(
        &mut self,
        k: &Kernel,
        cpu: u32,
        now: Ps,
        d: Ps,
        before: &[Ps; NR_BUCKETS],
        after: &[Ps; NR_BUCKETS],
        idle_queue: bool,
    ) {
        let ci = cpu as usize;
        let mut post = Post::default();
        match self.kind {
            StepKind::IrqEntry if self.tracks[ci].open[IRQ as usize].is_none() => {
                self.open(cpu, IRQ, now, Label::Irq)
            }
            StepKind::Task(t, c) => {
                if self.task_op.len() <= t {
                    self.task_op.resize(t + 1, None);
                }
                if let Continuation::User(op) = c {
                    self.task_op[t] = op_name(op, idle_queue);
                }
                if self.tracks[ci].open[OP as usize].is_none() {
                    if let Some(name) = self.task_op[t] {
                        self.open(cpu, OP, now, Label::Op(name));
                        self.tracks[ci].op_task = Some(t);
                    }
                }
                if idle_queue && k.trace_task(cpu) == Some(t) {
                    self.task_op[t] = None;
                }
            }
            _ => {}
        }
        let t = &self.tracks[ci];
        post.close_op = t.open[OP as usize].is_some()
            && (t.op_task != k.trace_task(cpu) || { matches!(self.kind, StepKind::Task(..)) && idle_queue });
        post.close_irq = matches!(self.kind, StepKind::IrqEntry | StepKind::Irq) && !k.in_irq(cpu);
        post.lazy = k.trace_is_lazy(cpu);

        // The charges in order, each bucket's stretched by the engine's noise as the bucket was.
        let mut logged = [Ps::ZERO; NR_BUCKETS];
        for &(b, x, _) in &self.log.charges {
            logged[b as usize] += x;
        }
        let mut left: [Ps; NR_BUCKETS] = std::array::from_fn(|i| after[i] - before[i]);
        let mut p = Pending { start: now, end: now + d, post, ..Default::default() };
        let mut at = now;
        let mut starts = Vec::with_capacity(self.log.charges.len());
        for (i, &(b, x, lock)) in self.log.charges.iter().enumerate() {
            let bi = b as usize;
            let last = !self.log.charges[i + 1..].iter().any(|c| c.0 == b);
            let y = if last {
                left[bi]
            } else {
                Ps((x.0 as u128 * (after[bi] - before[bi]).0 as u128 / logged[bi].0.max(1) as u128) as u64)
                    .min(left[bi])
            };
            left[bi] = left[bi] - y;
            let e = (at + y).min(p.end);
            starts.push((at, e));
            let label = lock.map_or(Label::Bucket(b), Label::Lock);
            p.segs.push((at, e, label));
            at = e;
        }
        if at < p.end {
            p.segs.push((at, p.end, Label::Uncharged));
        }
        // Each IPI leaves from the middle of the charge it was sent before (its send's own).
        let sends = std::mem::take(&mut self.log.sends);
        for &(pos, target, arrival) in &sends {
            let (s, e) = starts.get(pos).or_else(|| starts.last()).copied().unwrap_or((now, now));
            let id = self.flows.len();
            self.flows.push(FlowEnds { from_cpu: cpu, from: None, to_cpu: target, to: None });
            p.flows.push((Ps(s.0 + (e.0 - s.0) / 2), id));
            self.tracks[target as usize].incoming.push((arrival, id));
        }
        self.log.sends = sends;
        // The interrupt takes every IPI that has arrived (the APIC merged them).
        if self.kind == StepKind::IrqEntry {
            let (s, e) = starts.first().copied().unwrap_or((now, now));
            let to = Ps(s.0 + (e.0 - s.0) / 2);
            let inc = &mut self.tracks[ci].incoming;
            let mut i = 0;
            while i < inc.len() {
                if inc[i].0 <= now {
                    let (_, id) = inc.swap_remove(i);
                    self.flows[id].to = Some(to);
                } else {
                    i += 1;
                }
            }
        }
        self.tracks[ci].pending = Some(p);
        self.sample(k, cpu, now, now + d, after, before);
    }

    /// Counters that changed: this CPU's TLB (when the step could have filled or flushed it)
    /// and every CPU's call queue.
    fn sample(
        &mut self,
        k: &Kernel,
        cpu: u32,
        now: Ps,
        end: Ps,
        after: &[Ps; NR_BUCKETS],
        before: &[Ps; NR_BUCKETS],
    ) {
        let only_user_or_waits = (0..NR_BUCKETS).all(|i| {
            after[i] == before[i]
                || [Bucket::User, Bucket::IpiSend, Bucket::IpiWait, Bucket::LockWait, Bucket::Idle]
                    .contains(&Bucket::ALL[i])
        });
        if !only_user_or_waits {
            k.trace_tlb_entries(cpu, &mut self.scratch);
            if self.scratch != self.tracks[cpu as usize].tlb && self.inside(end) {
                self.tracks[cpu as usize].tlb.clone_from(&self.scratch);
                let per_structure = self.scratch.clone();
                self.push_sample(Sample::TlbEntries { cpu, at: end, per_structure });
            }
        }
        for c in 0..self.tracks.len() as u32 {
            let len = k.trace_call_queue_len(c);
            if len != self.tracks[c as usize].queue && self.inside(now) {
                self.tracks[c as usize].queue = len;
                self.push_sample(Sample::CallQueue { cpu: c, at: now, len });
            }
        }
        if let Some((inactive, active)) = k.trace_file_lru() {
            let moved =
                self.lru.is_none_or(|(i, a)| i.abs_diff(inactive) + a.abs_diff(active) >= LRU_SAMPLE_PAGES);
            if moved && self.inside(end) {
                self.lru = Some((inactive, active));
                self.push_sample(Sample::FileLru { at: end, inactive, active });
            }
        }
    }

    fn inside(&self, at: Ps) -> bool {
        at >= self.out.window.0 && at < self.out.window.1
    }

    fn push_sample(&mut self, s: Sample) {
        self.out.samples.push(s);
        self.count();
    }

    fn count(&mut self) {
        self.events += 1;
        if self.events >= self.spec.max_events && !self.out.truncated {
            self.out.truncated = true;
            self.out.window.1 = self.clock.clamp(self.out.window.0, self.out.window.1);
        }
    }

    /// Makes a step final: its slices, its IPIs' sending ends, and (`post`) what it left open or
    /// closed at its end.
    fn commit(&mut self, cpu: u32, p: Pending, post: bool) {
        for &(s, e, l) in &p.segs {
            self.seg(cpu, s, e, l);
        }
        for &(ts, id) in &p.flows {
            self.flows[id].from = Some(ts);
        }
        let ci = cpu as usize;
        self.tracks[ci].last_end = self.tracks[ci].last_end.max(p.end);
        if !post {
            return;
        }
        if p.post.close_irq {
            self.close(cpu, IRQ, p.end);
        }
        if p.post.close_op {
            self.close(cpu, OP, p.end);
            self.tracks[ci].op_task = None;
        }
        if p.post.lazy != self.tracks[ci].lazy {
            self.tracks[ci].lazy = p.post.lazy;
            if p.post.lazy {
                self.open(cpu, LAZY, p.end, Label::Lazy);
            } else {
                self.close(cpu, LAZY, p.end);
            }
        }
    }

    /// A step slice; merged into the one before if it continues it with the same label.
    fn seg(&mut self, cpu: u32, s: Ps, e: Ps, l: Label) {
        if e <= s {
            return;
        }
        let t = &mut self.tracks[cpu as usize];
        match &mut t.held {
            Some((_, he, hl)) if *he == s && *hl == l => *he = e,
            _ => {
                if let Some((hs, he, hl)) = t.held.replace((s, e, l)) {
                    self.emit(cpu, hs, he, STEP, hl);
                }
            }
        }
    }

    fn flush_held(&mut self, cpu: u32) {
        if let Some((s, e, l)) = self.tracks[cpu as usize].held.take() {
            self.emit(cpu, s, e, STEP, l);
        }
    }

    /// Opens a slice at `depth`; open slices deeper than it are split there, so that every
    /// slice nests.
    fn open(&mut self, cpu: u32, depth: u8, at: Ps, l: Label) {
        self.flush_held(cpu);
        self.split_below(cpu, depth, at);
        self.tracks[cpu as usize].open[depth as usize] = Some((at, l));
    }

    fn close(&mut self, cpu: u32, depth: u8, at: Ps) {
        self.flush_held(cpu);
        if let Some((s, l)) = self.tracks[cpu as usize].open[depth as usize].take() {
            self.split_below(cpu, depth, at);
            self.emit(cpu, s, at.max(s), depth, l);
        }
    }

    fn split_below(&mut self, cpu: u32, depth: u8, at: Ps) {
        for d in depth + 1..STEP {
            if let Some((s, l)) = self.tracks[cpu as usize].open[d as usize] {
                if at > s {
                    self.emit(cpu, s, at, d, l);
                    self.tracks[cpu as usize].open[d as usize] = Some((at, l));
                }
            }
        }
    }

    /// Keeps a slice that reaches into the window.
    fn emit(&mut self, cpu: u32, start: Ps, end: Ps, depth: u8, label: Label) {
        let (ws, we) = self.out.window;
        if end <= start || end <= ws || start >= we {
            return;
        }
        self.out.slices.push(Slice { cpu, start, end, depth, label });
        self.count();
    }

    /// The run ended at `end`: everything closed, clipped to the window, in time order.
    pub(crate) fn finish(mut self, k: &Kernel, end: Ps) -> Recording {
        self.clock = end;
        for cpu in 0..self.tracks.len() as u32 {
            let ci = cpu as usize;
            if let Some(p) = self.tracks[ci].pending.take() {
                self.commit(cpu, p, true);
            }
            if let Some(p) = self.tracks[ci].remainder.take() {
                let at = self.tracks[ci].last_end;
                self.commit(cpu, p.shifted(at), true);
            }
            let from = self.tracks[ci].last_end;
            if end > from {
                let b = if k.waiting(cpu) { Bucket::IpiWait } else { Bucket::Idle };
                self.seg(cpu, from, end, Label::Bucket(b));
            }
            let last = self.tracks[ci].last_end.max(end);
            for d in (LAZY..STEP).rev() {
                self.close(cpu, d, last);
            }
            self.flush_held(cpu);
        }
        let (ws, we) = self.out.window;
        let mut out = self.out;
        out.slices.retain_mut(|s| {
            (s.start, s.end) = (s.start.max(ws), s.end.min(we));
            s.end > s.start
        });
        out.slices.sort_by_key(|s| (s.start, s.cpu, std::cmp::Reverse(s.end), s.depth));
        let inside = |t: Ps| t >= ws && t < we;
        out.flows = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(id, f)| match (f.from, f.to) {
                (Some(from), Some(to)) if inside(from) && inside(to) => {
                    Some(Flow { id: id as u64, from_cpu: f.from_cpu, from, to_cpu: f.to_cpu, to })
                }
                _ => None,
            })
            .collect();
        out.samples.retain(|s| match s {
            Sample::TlbEntries { at, .. } | Sample::CallQueue { at, .. } | Sample::FileLru { at, .. } => {
                inside(*at)
            }
        });
        out
    }
}

/// The operation a task's program asks for, as a timeline names it: system calls always, an
/// access or computation only when it left kernel work queued (it faulted).
fn op_name(op: Op, done: bool) -> Option<&'static str> {
    Some(match op {
        Op::Access { .. } if !done => "page fault (user access)",
        Op::Access { .. } | Op::Compute(_) | Op::Stream { .. } | Op::Iteration => return None,
        Op::CreateFile { .. } => "open+ftruncate+unlink",
        Op::Mmap { .. } => "mmap",
        Op::Munmap { .. } => "munmap",
        Op::MadviseDontneed { .. } => "madvise(MADV_DONTNEED)",
        Op::MadvisePageout { .. } => "madvise(MADV_PAGEOUT)",
        Op::MovePages { .. } => "move_pages",
        Op::Ppc8xx(_) => "dd (MPC8xx)",
        Op::Kswapd => "kswapd",
        Op::PipeWrite { .. } => "write (pipe)",
        Op::PipeRead { .. } => "read (pipe)",
        Op::UnixSend { .. } => "write (AF_UNIX)",
        Op::UnixRecv { .. } => "read (AF_UNIX)",
        Op::Send { .. } => "send",
        Op::Recv { .. } => "recv",
        Op::FsCreate { .. } => "open(O_CREAT)",
        Op::FsMkdirExists { .. } => "mkdir (EEXIST)",
        Op::FsWriteEmpty => "write",
        Op::ReadZero => "read (/dev/zero)",
        Op::TmpfsWrite { .. } => "write (tmpfs)",
        Op::FsClose => "close",
    })
}

#[cfg(test)]
mod tests;
