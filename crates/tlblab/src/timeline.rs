//! `tlblab run --timeline FILE.json`: a recorded run (tlblab-model's engine/timeline.rs) written
//! in the Chrome trace-event JSON format (`{"traceEvents": [...]}`), which ui.perfetto.dev and
//! chrome://tracing open, and [`check`], which reads such a file back and checks it.
//!
//! One process per socket, one thread per simulated CPU (`tid` = CPU number); `X` slices
//! (nested: lazy TLB mode, the operation, the call-function interrupt, the step's time by what
//! it was charged to); an `s`/`f` flow from each IPI's send to the interrupt that took it; `C`
//! counters per CPU (valid TLB entries per structure, call-queue length). Times are microseconds
//! from the start of the measured interval, whole nanoseconds (simulated picoseconds are
//! truncated to the nanosecond, both ends of a slice alike, so nesting survives).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use serde_json::{json, Value};
use tlblab_model::engine::timeline::{Label, Recording, Sample, TimelineSpec, DEFAULT_MAX_EVENTS};
use tlblab_model::time::Ps;

use crate::spec::parse_duration;

/// `--timeline-window`: `START..END` (each a duration from the start of the measured interval;
/// START may be `0`) or one duration `D`, meaning `0..D`.
pub fn parse_window(s: &str) -> Result<(Ps, Ps), String> {
    let bad = |why: String| {
        format!(
            "`{}`: {why}; expected START..END (e.g. 100us..200us) or a duration (e.g. 50us)",
            s.escape_debug()
        )
    };
    let t = s.trim();
    let (a, b) = match t.split_once("..") {
        Some((a, b)) => (a.trim(), b.trim()),
        None => ("0", t),
    };
    let start = match a {
        "0" | "" => Ps::ZERO,
        a => parse_duration(a).map_err(bad)?,
    };
    let end = parse_duration(b).map_err(bad)?;
    if end <= start {
        return Err(bad(format!("its end ({end}) is not after its start ({start})")));
    }
    Ok((start, end))
}

/// What `--timeline` and `--timeline-window` ask for, checked before the run: `path` must name a
/// file (not a directory) in an existing directory.
pub fn spec_for(path: &Path, window: Option<(Ps, Ps)>) -> Result<TimelineSpec> {
    let shown = path.display();
    if path.is_dir() {
        bail!("--timeline: `{shown}` is a directory; give a file to write, e.g. {shown}/run.json");
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        bail!("--timeline: `{}` is not a directory, so `{shown}` cannot be written there", parent.display());
    }
    Ok(TimelineSpec { window, max_events: DEFAULT_MAX_EVENTS })
}

/// Microseconds from the origin, in whole nanoseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// One trace event (fields absent where the phase has none).
#[derive(Serialize)]
struct Event<'a> {
    ph: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Value>,
}

impl<'a> Event<'a> {
    fn new(ph: &'static str, name: &'a str, pid: u32) -> Event<'a> {
        Event { ph, name, cat: None, pid, tid: None, ts: None, dur: None, id: None, bp: None, args: None }
    }
}

/// Writes `rec` to `out` as trace-event JSON; `about` goes into `otherData` (the run's machine,
/// kernel, workload).
pub fn write(rec: &Recording, about: Value, out: &mut impl Write) -> Result<()> {
    let ns = |t: Ps| (t.0.saturating_sub(rec.origin.0)) / 1000;
    let mut first = true;
    let mut put = |out: &mut dyn Write, e: &Event| -> Result<()> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        serde_json::to_writer(&mut *out, e)?;
        Ok(())
    };
    out.write_all(b"{\"traceEvents\":[")?;
    let sockets: BTreeSet<u32> = rec.cpus.iter().map(|c| c.socket).collect();
    for s in &sockets {
        let name = format!("socket {s}");
        put(out, &Event { args: Some(json!({ "name": name })), ..Event::new("M", "process_name", *s) })?;
        put(
            out,
            &Event { args: Some(json!({ "sort_index": s })), ..Event::new("M", "process_sort_index", *s) },
        )?;
    }
    for (cpu, c) in rec.cpus.iter().enumerate() {
        let name = format!("cpu {cpu} (socket {}, core {})", c.socket, c.core);
        let tid = Some(cpu as u32);
        put(
            out,
            &Event { tid, args: Some(json!({ "name": name })), ..Event::new("M", "thread_name", c.socket) },
        )?;
        put(
            out,
            &Event {
                tid,
                args: Some(json!({ "sort_index": cpu })),
                ..Event::new("M", "thread_sort_index", c.socket)
            },
        )?;
    }
    let pid = |cpu: u32| rec.cpus[cpu as usize].socket;
    for s in &rec.slices {
        let (a, b) = (ns(s.start), ns(s.end));
        let name = s.label.name();
        let args = match s.label {
            Label::Lock(l) => Some(json!({ "lock": l })),
            _ => None,
        };
        put(
            out,
            &Event {
                cat: Some(s.label.category()),
                tid: Some(s.cpu),
                ts: Some(us(a)),
                dur: Some(us(b - a)),
                args,
                ..Event::new("X", &name, pid(s.cpu))
            },
        )?;
    }
    for f in &rec.flows {
        let common = |ph, cpu: u32, t: Ps| Event {
            cat: Some("ipi"),
            tid: Some(cpu),
            ts: Some(us(ns(t))),
            id: Some(f.id),
            ..Event::new(ph, "IPI", pid(cpu))
        };
        put(out, &common("s", f.from_cpu, f.from))?;
        put(out, &Event { bp: Some("e"), ..common("f", f.to_cpu, f.to) })?;
    }
    for s in &rec.samples {
        let (cpu, at, args, name) = match s {
            Sample::TlbEntries { cpu, at, per_structure } => {
                let names = &rec.cpus[*cpu as usize].tlb_names;
                let args: serde_json::Map<String, Value> =
                    names.iter().zip(per_structure).map(|(n, v)| (n.clone(), json!(v))).collect();
                (*cpu, *at, Value::Object(args), format!("cpu {cpu} TLB entries"))
            }
            Sample::CallQueue { cpu, at, len } => {
                (*cpu, *at, json!({ "requests": len }), format!("cpu {cpu} call queue"))
            }
            // The machine's lists, on the first CPU's process.
            Sample::FileLru { at, inactive, active } => {
                (0, *at, json!({ "inactive": inactive, "active": active }), "file LRU pages".to_string())
            }
        };
        put(out, &Event { ts: Some(us(ns(at))), args: Some(args), ..Event::new("C", &name, pid(cpu)) })?;
    }
    let (ws, we) = rec.window;
    let other = json!({
        "tlblab": about,
        "window_us": [us(ns(ws)), us(ns(we))],
        "truncated": rec.truncated,
        "time_origin": "the start of the measured interval (after the warm-up)",
    });
    write!(out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{other}}}\n")?;
    Ok(())
}

/// Writes the recording to `path` (after the run: a refused flag leaves nothing behind).
pub fn write_file(rec: &Recording, about: Value, path: &Path) -> Result<()> {
    let f =
        std::fs::File::create(path).with_context(|| format!("--timeline: creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    write(rec, about, &mut w)
        .and_then(|_| w.flush().map_err(Into::into))
        .with_context(|| format!("--timeline: writing {}", path.display()))
}

/// The line printed when the event cap cut the timeline short.
pub fn truncation_note(rec: &Recording, path: &Path) -> Option<String> {
    rec.truncated.then(|| {
        format!(
            "timeline: stopped after {DEFAULT_MAX_EVENTS} events, {} into the measured interval; {} \
             covers {}..{} (choose a part with --timeline-window START..END)",
            rec.window.1 - rec.origin,
            path.display(),
            rec.window.0 - rec.origin,
            rec.window.1 - rec.origin
        )
    })
}

/// What [`check`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub slices: usize,
    pub flows: usize,
    pub counters: usize,
    /// The `tid`s named by `thread_name` metadata.
    pub tids: BTreeSet<u64>,
}

/// Reads trace-event JSON back and checks it as a viewer needs it: every `X` has `dur >= 0` and
/// the slices of each track nest (none ends inside another it started in); every `B` has its
/// `E` on the same track, in order; every flow id has its `s` and its `f`; counters carry
/// numbers; every event's track is a named thread (with `cpus`, the named tids are exactly
/// `0..cpus`).
pub fn check(text: &str, cpus: Option<u32>) -> Result<Summary> {
    let v: Value = serde_json::from_str(text).context("not JSON")?;
    let events = v["traceEvents"].as_array().ok_or_else(|| anyhow!("no traceEvents array"))?;
    let mut sum = Summary::default();
    let num = |e: &Value, k: &str| e[k].as_f64().ok_or_else(|| anyhow!("{k} is not a number in {e}"));
    let track = |e: &Value| -> Result<(u64, u64)> {
        Ok((
            e["pid"].as_u64().ok_or_else(|| anyhow!("no pid in {e}"))?,
            e["tid"].as_u64().ok_or_else(|| anyhow!("no tid in {e}"))?,
        ))
    };
    // Whole nanoseconds, as a viewer converts them.
    let ns = |x: f64| (x * 1000.0).round() as i64;
    let mut slices: BTreeMap<(u64, u64), Vec<(i64, i64)>> = BTreeMap::new();
    let mut open: HashMap<(u64, u64), Vec<(String, i64)>> = HashMap::new();
    let mut flows: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
    let mut used: BTreeSet<u64> = BTreeSet::new();
    for e in events {
        let ph = e["ph"].as_str().ok_or_else(|| anyhow!("no ph in {e}"))?;
        match ph {
            "M" => {
                if e["name"] == "thread_name" {
                    sum.tids.insert(track(e)?.1);
                }
            }
            "X" => {
                let (ts, dur) = (num(e, "ts")?, num(e, "dur")?);
                if dur < 0.0 {
                    bail!("negative dur in {e}");
                }
                slices.entry(track(e)?).or_default().push((ns(ts), ns(ts) + ns(dur)));
                used.insert(track(e)?.1);
                sum.slices += 1;
            }
            "B" => {
                let name = e["name"].as_str().unwrap_or("").to_string();
                open.entry(track(e)?).or_default().push((name, ns(num(e, "ts")?)));
                used.insert(track(e)?.1);
            }
            "E" => {
                let (name, start) = open
                    .get_mut(&track(e)?)
                    .and_then(|s| s.pop())
                    .ok_or_else(|| anyhow!("an E with no open B on its track: {e}"))?;
                if ns(num(e, "ts")?) < start {
                    bail!("`{name}` ends before it begins: {e}");
                }
                sum.slices += 1;
            }
            "s" | "f" => {
                num(e, "ts")?;
                let id = e["id"].as_u64().ok_or_else(|| anyhow!("a flow event without an id: {e}"))?;
                let ends = flows.entry(id).or_default();
                if ph == "s" {
                    ends.0 += 1;
                } else {
                    ends.1 += 1;
                }
                used.insert(track(e)?.1);
            }
            "C" => {
                num(e, "ts")?;
                let args = e["args"].as_object().ok_or_else(|| anyhow!("a counter without args: {e}"))?;
                if args.is_empty() || !args.values().all(Value::is_number) {
                    bail!("a counter whose values are not all numbers: {e}");
                }
                sum.counters += 1;
            }
            other => bail!("an event of phase `{other}`, which tlblab does not write: {e}"),
        }
    }
    if let Some((t, s)) = open.iter().find(|(_, s)| !s.is_empty()) {
        bail!("`{}` on track {t:?} is never closed", s[0].0);
    }
    for (t, list) in &mut slices {
        list.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut stack: Vec<i64> = Vec::new();
        for &(s, e) in list.iter() {
            while stack.last().is_some_and(|&top| top <= s) {
                stack.pop();
            }
            if let Some(&top) = stack.last() {
                if e > top {
                    bail!("on track {t:?} a slice {s}..{e} ns overlaps the end of the one it starts in ({top} ns)");
                }
            }
            stack.push(e);
        }
    }
    for (id, (s, f)) in &flows {
        if (*s, *f) != (1, 1) {
            bail!("flow {id} has {s} start(s) and {f} end(s)");
        }
    }
    sum.flows = flows.len();
    if let Some(t) = used.difference(&sum.tids).next() {
        bail!("events on tid {t}, which no thread_name names");
    }
    if let Some(n) = cpus {
        if sum.tids != (0..n as u64).collect() {
            bail!("the named tids are not the {n} CPUs: {:?}", sum.tids);
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_model::attribution::Bucket;
    use tlblab_model::engine::timeline::{CpuInfo, Flow, Slice};

    #[test]
    fn windows_parse_as_a_range_or_a_duration() {
        assert_eq!(parse_window("100us..200us").unwrap(), (Ps::US * 100, Ps::US * 200));
        assert_eq!(parse_window("50us").unwrap(), (Ps::ZERO, Ps::US * 50));
        assert_eq!(parse_window("0..1ms").unwrap(), (Ps::ZERO, Ps::MS));
        for bad in ["", "..", "5", "2us..1us", "1us..1us", "x..1us", "1us..", "1us..2us..3us"] {
            let e = parse_window(bad).unwrap_err();
            assert!(e.contains("START..END") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    fn recording() -> Recording {
        let cpu = |socket| CpuInfo { socket, core: socket, tlb_names: vec!["L1".into(), "L2".into()] };
        let us = |n: u64| Ps::US * n;
        let slice = |cpu, a, b, depth, label| Slice { cpu, start: us(a), end: us(b), depth, label };
        Recording {
            origin: us(1),
            window: (us(1), us(20)),
            truncated: false,
            cpus: vec![cpu(0), cpu(1)],
            slices: vec![
                slice(0, 1, 10, 1, Label::Op("munmap")),
                slice(0, 2, 4, 3, Label::Bucket(Bucket::IpiSend)),
                slice(0, 4, 9, 3, Label::Lock("mmap_lock")),
                slice(1, 5, 7, 2, Label::Irq),
                slice(1, 5, 7, 3, Label::Bucket(Bucket::Handler)),
            ],
            flows: vec![Flow { id: 7, from_cpu: 0, from: us(3), to_cpu: 1, to: us(6) }],
            samples: vec![
                Sample::TlbEntries { cpu: 1, at: us(7), per_structure: vec![3, 40] },
                Sample::CallQueue { cpu: 1, at: us(4), len: 1 },
            ],
        }
    }

    fn written(rec: &Recording) -> String {
        let mut out = Vec::new();
        write(rec, json!({ "machine": "test" }), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_written_recording_checks_and_keeps_its_times() {
        let text = written(&recording());
        let sum = check(&text, Some(2)).unwrap();
        assert_eq!((sum.slices, sum.flows, sum.counters), (5, 1, 2));
        let v: Value = serde_json::from_str(&text).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let lock = ev.iter().find(|e| e["name"] == "lock wait: mmap_lock").unwrap();
        // Microseconds from the origin (1 us): 4 us -> 3.0, 5 us long.
        assert_eq!(
            (lock["ts"].as_f64(), lock["dur"].as_f64(), lock["tid"].as_u64()),
            (Some(3.0), Some(5.0), Some(0))
        );
        assert_eq!(lock["args"]["lock"], "mmap_lock");
        let f = ev.iter().find(|e| e["ph"] == "f").unwrap();
        assert_eq!((f["bp"].as_str(), f["tid"].as_u64(), f["pid"].as_u64()), (Some("e"), Some(1), Some(1)));
        let tlb = ev.iter().find(|e| e["name"] == "cpu 1 TLB entries").unwrap();
        assert_eq!(tlb["args"]["L2"], 40);
        assert!(ev.iter().any(|e| e["args"]["name"] == "cpu 1 (socket 1, core 1)"));
        // The same recording writes the same bytes.
        assert_eq!(text, written(&recording()));
    }

    #[test]
    fn the_checker_refuses_what_a_viewer_would_misdraw() {
        let mut r = recording();
        r.slices[2].end = Ps::US * 11; // the lock wait outlives the munmap it is in
        assert!(check(&written(&r), None).unwrap_err().to_string().contains("overlaps"));
        let text = written(&recording());
        let lone = text.replace("\"ph\":\"f\"", "\"ph\":\"s\"");
        assert!(check(&lone, None).unwrap_err().to_string().contains("flow 7 has 2 start(s) and 0 end(s)"));
        assert!(check(&text, Some(3)).unwrap_err().to_string().contains("not the 3 CPUs"));
        let neg = text.replacen("\"dur\":9.0", "\"dur\":-9.0", 1);
        assert!(check(&neg, None).unwrap_err().to_string().contains("negative dur"));
        let word = text.replace("\"requests\":1", "\"requests\":\"one\"");
        assert!(check(&word, None).unwrap_err().to_string().contains("not all numbers"));
        let b = r#"{"traceEvents":[{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"c"}},
            {"ph":"B","name":"a","pid":0,"tid":0,"ts":1.0}]}"#;
        assert!(check(b, None).unwrap_err().to_string().contains("never closed"));
        let unnamed = text.replace("\"name\":\"thread_name\",\"pid\":1", "\"name\":\"x\",\"pid\":1");
        assert!(check(&unnamed, None).unwrap_err().to_string().contains("events on tid 1"));
    }

    #[test]
    fn a_directory_or_a_missing_directory_is_refused() {
        let dir = std::env::temp_dir();
        let e = spec_for(&dir, None).unwrap_err().to_string();
        assert!(e.starts_with("--timeline:") && e.contains("is a directory"), "{e}");
        let e = spec_for(&dir.join("no-such-dir-tl37").join("t.json"), None).unwrap_err().to_string();
        assert!(e.contains("is not a directory"), "{e}");
        assert!(spec_for(Path::new("t.json"), None).is_ok());
    }
}
