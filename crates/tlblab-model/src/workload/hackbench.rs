//! hackbench (Ingo Molnar's hackbench.c, the version mmtests 3d1013d4 runs as
//! `hackbench [-pipe] GROUPS process|thread LOOPS`; docs/references/seeds-001-003-004.md#benchmarks-2016): G
//! groups, each of 20 receivers and 20 senders. Each receiver owns one pipe (`-pipe`) or one AF_UNIX stream
//! socketpair; each sender writes `loops` rounds of one 100-byte message to every receiver of its
//! group; each receiver reads 100 bytes at a time, `20 x loops` messages. hackbench prints
//! "Time: S" for the whole run, lower is better.
//!
//! How the model gets that time: the tasks' loops run without end and the measured window
//! samples the steady state; the receivers count one iteration per 100-byte message. Time is
//! then the full run's message count, `groups x 20 x 20 x loops`, at the window's rate
//! ([`Hackbench::time`]). So `loops` scales the reported time exactly, and the simulated work is
//! the window's, whatever the loop count. What this leaves out: the fork/ready handshake before
//! the clock starts counts in the real Time (hackbench starts timing before it wakes the
//! children), and the tail where the first groups finish and the machine is no longer full.
//!
//! The group count is the run's task count (`--threads`, an experiment's rows), as hackbench
//! takes it as its first argument; it may also be written in the workload text in hackbench's
//! own position (`hackbench -pipe 12 process 20000`), which then sets the default.
//!
//! Where the run starts (`start=`): `empty` (the default) starts as hackbench does, every pipe
//! and socket empty, and the measured window waits out the transient in which the senders fill
//! them (sockets: until each holds its `sk_sndbuf`, 277 skbs of 768 bytes; pipes: 16 pages).
//! `full` starts from the state that transient ends in: before the clock starts, each sender in
//! turn writes one message to each receiver of its group, as its loop does, through the kernel's
//! own write path on its CPU (SLUB, the page allocator, the queue), until no write would go
//! without sleeping; this runs outside simulated time (`Simulation::untimed`: the locks' clocks
//! are put back). The senders' loops then start at their first receiver, as in `empty`.
//!
//! Placement (`place=`): real hackbench runs unbound. `bound` (the default) binds the k-th task
//! created (per group: the 20 receivers, then the 20 senders, as hackbench.c forks them) to CPU k
//! mod CPUs, and the scheduler time-slices each CPU's tasks (linux/kernel/sched/core.rs). `wake`
//! starts them there but unbound: each wake-up places the task as `select_task_rq_fair` does,
//! on PELT's load averages (linux/kernel/sched/fair/select.rs), and a busy CPU's periodic balance
//! pulls queued tasks (fair/balance.rs). Not the default: idle balancing is missing and the
//! split it settles in is not checked against the host's
//! (docs/references/linux-6x.md#wake-placement).
//!
//! Policy (`policy=`): `normal` (the default, `SCHED_NORMAL`) or `batch`, as `chrt -b 0
//! hackbench ...` runs it: every task `SCHED_BATCH`, so no wake-up preempts (the tick and the
//! tasks' own sleeps still switch). The real side of `validate` runs both; the pair separates
//! what the wake-up preemption costs from what each message costs.
//!
//! `thread` mode: every task shares one mm (a switch
//! between them keeps CR3); `process` mode: one mm per task.

use super::{Benchmark, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::linux::syscalls::{Op, Program};
use crate::profile::{MachineProfile, Section};
use crate::rng::Rng;
use crate::run::MAX_TASKS;
use crate::time::Ps;

/// Placement when the workload text does not say.
pub const DEFAULT_PLACE: Place = Place::Bound;

/// hackbench.c: `#define DATASIZE 100`.
pub const DATASIZE: u32 = 100;
/// hackbench.c: `num_fds = 20` (receivers and senders per group).
pub const NUM_FDS: u32 = 20;
/// hackbench.c: `loops = 100` unless given.
pub const DEFAULT_LOOPS: u64 = 100;
/// Tasks per group.
pub const TASKS_PER_GROUP: u32 = 2 * NUM_FDS;
/// The most groups a run may have (their tasks within `run::MAX_TASKS`).
pub const MAX_GROUPS: u32 = MAX_TASKS / TASKS_PER_GROUP;

const USAGE: &str =
    "hackbench [-pipe] [GROUPS] [process|thread] [LOOPS] [start=empty|full] [place=bound|wake] \
     [policy=normal|batch]";

const PARAMS: &[(&str, &str)] = &[
    ("start", "empty | full (the senders' queues already full)"),
    ("place", "bound | wake (tasks unbound, placed at each wake-up by select_task_rq_fair)"),
    ("policy", "normal | batch (every task SCHED_BATCH: no wake-up preemption)"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Process,
    Thread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Pipe,
    Socket,
}

/// Where the tasks run (see the module comment, "Placement").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Bound,
    Wake,
}

/// What the pipes and sockets hold when the clock starts (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Empty,
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hackbench {
    pub transport: Transport,
    /// The group count if the text gave one (else the run's task count).
    pub groups: Option<u32>,
    pub mode: Mode,
    pub loops: u64,
    pub start: Start,
    pub place: Place,
    /// Every task `SCHED_BATCH` (`policy=batch`).
    pub batch: bool,
}

fn parse_count(word: &str, what: &str, max: u64) -> Result<u64, String> {
    match word.parse::<i64>() {
        Ok(n) if (1..=max as i64).contains(&n) => Ok(n as u64),
        _ => Err(format!("hackbench: {what} `{word}` is not allowed; allowed 1 ..= {max} ({USAGE})")),
    }
}

fn is_number(w: &str) -> bool {
    w.strip_prefix('-').unwrap_or(w).parse::<u64>().is_ok()
}

impl Hackbench {
    /// The seconds hackbench would print for `groups` groups, given `messages` received in
    /// `measured`: the full run's message count at that rate.
    pub fn time(&self, groups: u32, messages: u64, measured: Ps) -> f64 {
        let total = groups as f64 * (NUM_FDS * NUM_FDS) as f64 * self.loops as f64;
        total * measured.as_secs_f64() / messages.max(1) as f64
    }

    fn parse_words(all: &[&str]) -> Result<Hackbench, String> {
        let mut start = Start::Empty;
        let mut place = DEFAULT_PLACE;
        let mut batch = false;
        let mut words = Vec::new();
        for &w in all {
            match w.split_once('=') {
                Some(("start", "empty")) => start = Start::Empty,
                Some(("start", "full")) => start = Start::Full,
                Some(("place", "bound")) => place = Place::Bound,
                Some(("place", "wake")) => place = Place::Wake,
                Some(("policy", "normal")) => batch = false,
                Some(("policy", "batch")) => batch = true,
                Some((k, v)) => {
                    return Err(format!(
                        "hackbench parameter `{k}={v}` is not allowed; allowed: start=empty, start=full, \
                         place=bound, place=wake, policy=normal, policy=batch"
                    ))
                }
                None => words.push(w),
            }
        }
        let mut i = 0;
        let mut transport = Transport::Socket;
        if words.get(i) == Some(&"-pipe") {
            transport = Transport::Pipe;
            i += 1;
        }
        let mut groups = None;
        if let Some(w) = words.get(i).filter(|w| is_number(w)) {
            groups = Some(parse_count(w, "group count", MAX_GROUPS as u64)? as u32);
            i += 1;
        }
        let mut mode = Mode::Process;
        if let Some(&w) = words.get(i).filter(|w| !is_number(w)) {
            mode = match w {
                "process" => Mode::Process,
                "thread" => Mode::Thread,
                _ => {
                    return Err(format!(
                        "hackbench: `{w}` is not allowed; allowed: process, thread ({USAGE})"
                    ))
                }
            };
            i += 1;
        }
        let mut loops = DEFAULT_LOOPS;
        if let Some(w) = words.get(i) {
            // Loops only scale the reported time: any positive count up to 10^9 will do.
            loops = parse_count(w, "loop count", 1_000_000_000)?;
            i += 1;
        }
        if let Some(extra) = words.get(i) {
            return Err(format!("hackbench: unexpected `{extra}` ({USAGE})"));
        }
        Ok(Hackbench { transport, groups, mode, loops, start, place, batch })
    }
}

impl Benchmark for Hackbench {
    fn parse(text: &str) -> Option<Result<Hackbench, String>> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.first() != Some(&"hackbench") {
            return None;
        }
        Some(Hackbench::parse_words(&words[1..]))
    }

    fn names() -> Vec<String> {
        [Transport::Pipe, Transport::Socket]
            .iter()
            .flat_map(|&transport| {
                [Mode::Process, Mode::Thread].map(|mode| {
                    Hackbench {
                        transport,
                        groups: None,
                        mode,
                        loops: DEFAULT_LOOPS,
                        start: Start::Empty,
                        place: DEFAULT_PLACE,
                        batch: false,
                    }
                    .name()
                })
            })
            .collect()
    }

    fn params() -> &'static [(&'static str, &'static str)] {
        PARAMS
    }

    fn options() -> &'static str {
        "hackbench [-pipe] [GROUPS] [process|thread] [LOOPS]: hackbench.c's arguments; GROUPS \
         defaults to the run's task count (--threads), LOOPS to 100 (mmtests: 20000)"
    }

    fn name(&self) -> String {
        let mut s = String::from("hackbench");
        if self.transport == Transport::Pipe {
            s.push_str(" -pipe");
        }
        if let Some(g) = self.groups {
            s.push_str(&format!(" {g}"));
        }
        s.push_str(match self.mode {
            Mode::Process => " process",
            Mode::Thread => " thread",
        });
        if self.loops != DEFAULT_LOOPS {
            s.push_str(&format!(" {}", self.loops));
        }
        if self.start == Start::Full {
            s.push_str(" start=full");
        }
        if self.place != DEFAULT_PLACE {
            s.push_str(match self.place {
                Place::Bound => " place=bound",
                Place::Wake => " place=wake",
            });
        }
        if self.batch {
            s.push_str(" policy=batch");
        }
        s
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "Time", unit: "s", higher_is_better: false }
    }

    fn sections(&self) -> &'static [Section] {
        match self.transport {
            Transport::Pipe => &[Section::Ipc],
            Transport::Socket => &[Section::Ipc, Section::Slab],
        }
    }

    fn tasks_created(&self, groups: u32) -> u32 {
        groups * TASKS_PER_GROUP
    }

    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        self.groups
    }

    fn check_run(&self, profile: &MachineProfile, groups: u32) -> Result<(), String> {
        if groups > MAX_GROUPS {
            return Err(format!("hackbench: {groups} groups: allowed 1 ..= {MAX_GROUPS} ({USAGE})"));
        }
        if profile.kernel.context_switch_ns.is_none() {
            return Err(format!(
                "hackbench runs {TASKS_PER_GROUP} tasks per group: machine `{}` needs key \
                 `kernel.context_switch_ns`",
                profile.name
            ));
        }
        Ok(())
    }

    /// `run.tasks` groups of 20 receivers then 20 senders, task k on CPU k mod CPUs.
    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        assert!(run.tasks <= MAX_GROUPS, "{} groups: allowed 1 ..= {MAX_GROUPS}", run.tasks);
        let groups = run.tasks;
        let cpus = run.profile.topology.cpus();
        // The children start within a microsecond of each other once the parent's wake-up
        // write releases them; this is all the seed changes.
        let mut jitter = Rng::stream(run.seed, "task start");
        let shared = sim.add_mm();
        let mut k = 0u32;
        // Adds a task on the next CPU; returns its id and CPU.
        let mut place = |sim: &mut Simulation, program: Box<dyn Program>| {
            let mm = match self.mode {
                Mode::Thread => shared,
                Mode::Process => sim.add_mm(),
            };
            let (id, cpu) = (sim.task_count(), k % cpus);
            sim.add_task_at(program, mm, cpu, Ps(jitter.below(Ps::US.0)));
            if self.place == Place::Wake {
                sim.unbind_task(id);
            }
            if self.batch {
                sim.set_batch(id);
            }
            k += 1;
            (id, cpu)
        };
        let transport = self.transport;
        for _ in 0..groups {
            // One pipe or socketpair per receiver; every sender of the group writes to each.
            let chans: Vec<u32> = (0..NUM_FDS)
                .map(|_| match transport {
                    Transport::Pipe => sim.add_pipe(),
                    Transport::Socket => sim.add_unix_pair(),
                })
                .collect();
            for &chan in &chans {
                place(sim, Box::new(Receiver { transport, chan }));
            }
            let senders: Vec<(usize, u32)> = (0..NUM_FDS)
                .map(|_| place(sim, Box::new(Sender { transport, chans: chans.clone(), next: 0 })))
                .collect();
            if self.start == Start::Full {
                fill(sim, transport, &chans, &senders);
            }
        }
    }

    /// The seconds for the whole run: see the module comment.
    fn score_for(&self, iterations: u64, measured: Ps, tasks: u32) -> f64 {
        self.time(tasks, iterations, measured)
    }
}

/// `start=full`: each sender (task id, CPU) in turn writes one message to each channel, as its
/// loop does, through the kernel's write path outside simulated time, until no write would go
/// without sleeping.
fn fill(sim: &mut Simulation, transport: Transport, chans: &[u32], senders: &[(usize, u32)]) {
    sim.untimed(|k, ctx| loop {
        let mut wrote = false;
        for &(t, cpu) in senders {
            ctx.cpu = cpu;
            for &chan in chans {
                wrote |= match transport {
                    Transport::Pipe => k.pipe_write_if_room(ctx, t, chan, DATASIZE),
                    Transport::Socket => k.unix_send_if_room(ctx, t, chan, DATASIZE),
                };
            }
        }
        if !wrote {
            break;
        }
    })
}

/// A sender: `write(out_fds[j], data, DATASIZE)` for each receiver j, round after round.
#[derive(Debug, Clone)]
struct Sender {
    transport: Transport,
    chans: Vec<u32>,
    next: usize,
}

impl Program for Sender {
    fn next(&mut self, out: &mut Vec<Op>) {
        let chan = self.chans[self.next];
        out.push(match self.transport {
            Transport::Pipe => Op::PipeWrite { pipe: chan, len: DATASIZE },
            Transport::Socket => Op::UnixSend { pair: chan, len: DATASIZE },
        });
        // Round robin over the receivers (a compare, not a division per message).
        self.next += 1;
        if self.next == self.chans.len() {
            self.next = 0;
        }
    }
}

/// A receiver: `read(in_fds[0], data, DATASIZE)`, one message per iteration.
#[derive(Debug, Clone)]
struct Receiver {
    transport: Transport,
    chan: u32,
}

impl Program for Receiver {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(match self.transport {
            Transport::Pipe => Op::PipeRead { pipe: self.chan, len: DATASIZE },
            Transport::Socket => Op::UnixRecv { pair: self.chan, len: DATASIZE },
        });
        out.push(Op::Iteration);
    }
}

#[cfg(test)]
mod tests;
