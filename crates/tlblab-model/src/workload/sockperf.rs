//! sockperf's throughput test (Mellanox sockperf, `sockperf throughput [--tcp] --mps max
//! --msg-size N`, as mmtests' network-sockperf-unbound runs it;
//! docs/references/seeds-001-003-004.md#benchmarks-2016): the client sends `--msg-size`-byte messages as fast
//! as it can to a server that only receives, both unpinned (the model: CPU 0 and CPU 1), sockets at the
//! system defaults (sockperf sets no buffer sizes unless asked). The metric is the client's summary line
//! "BandWidth is X MBps (Y Mbps)": messages sent per second times the size over 2^20 (binary mega, counted on
//! the sending side); reported as its Y = 8 X, the figure seed 004's tables carry
//! (docs/references/seeds-001-003-004.md#seed-004: 36.32 at 14 bytes is 340 k messages/s only as 8 x MiB/s).

use super::netperf::{stream_pair, Side};
use super::{flag_count, flag_pairs, Benchmark, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::linux::net::socket::Proto;
use crate::profile::Section;
use crate::time::Ps;

/// sockperf's largest message (`MAX_PAYLOAD_SIZE` 65506).
pub const MAX_MSG: u64 = 65_506;

const OPTIONS: &str =
    "throughput (required), --tcp (default UDP), --mps max (only), --msg-size BYTES (1..=65506, required)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sockperf {
    pub proto: Proto,
    pub size: u64,
}

impl Benchmark for Sockperf {
    fn parse(text: &str) -> Option<Result<Sockperf, String>> {
        let mut words = text.split_whitespace();
        if words.next()? != "sockperf" {
            return None;
        }
        Some(parse_args(&words.collect::<Vec<_>>()))
    }

    fn names() -> Vec<String> {
        vec![
            "sockperf throughput --mps max --msg-size 100".into(),
            "sockperf throughput --tcp --mps max --msg-size 100".into(),
        ]
    }

    fn options() -> &'static str {
        OPTIONS
    }

    fn name(&self) -> String {
        let tcp = if self.proto == Proto::Tcp { " --tcp" } else { "" };
        format!("sockperf throughput{tcp} --mps max --msg-size {}", self.size)
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "bandwidth", unit: "Mbps", higher_is_better: true }
    }

    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        Some(2)
    }

    fn fixed_tasks(&self) -> Option<u32> {
        Some(2)
    }

    fn sections(&self) -> &'static [Section] {
        &[Section::Slab, Section::Net]
    }

    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        // The server's read is not sized here: each recv takes the front segment whole.
        stream_pair(sim, run, self.proto, None, self.size, 0, Side::Send);
    }

    /// Messages sent per second times the size, in 8 x MiB/s (sockperf's "Mbps").
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        8.0 * iterations as f64 * self.size as f64 / (1u64 << 20) as f64 / measured.as_secs_f64()
    }
}

fn parse_args(words: &[&str]) -> Result<Sockperf, String> {
    if words.first() != Some(&"throughput") {
        return Err(format!("sockperf: the `throughput` subcommand is required (first); options: {OPTIONS}"));
    }
    let (mut proto, mut size) = (Proto::Udp, None);
    for (flag, value) in flag_pairs(&words[1..], &["--tcp"]) {
        match (flag, value) {
            ("--tcp", _) => proto = Proto::Tcp,
            ("--mps", Some("max")) => {}
            ("--mps", v) => {
                return Err(format!("sockperf: `--mps {}` is not allowed; allowed max", v.unwrap_or("")))
            }
            ("--msg-size" | "-m", _) => size = Some(flag_count("sockperf", flag, value, MAX_MSG)?),
            _ => return Err(format!("sockperf: `{flag}` is not allowed; options: {OPTIONS}")),
        }
    }
    let size = size.ok_or_else(|| format!("sockperf: `--msg-size` is required; options: {OPTIONS}"))?;
    Ok(Sockperf { proto, size })
}
