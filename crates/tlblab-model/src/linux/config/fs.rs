//! The file systems' knobs (fs/pipe.c).

use super::*;
use crate::linux::fs::pipe::PipeWait;

pub(super) const KNOBS: &[Knob] = &[Knob {
    name: "pipe_wait",
    section: "fs",
    needed: Needed::Newer,
    allowed: "4.9 | 5.6",
    doc: "how pipe readers and writers sleep and wake (fs/pipe.c): 4.9 (the blank value, v2.6..v5.4) one \
          non-exclusive queue per pipe, every write that adds data and every read that frees a buffer wakes \
          every sleeper; 5.6 (v5.5's was_empty/was_full rules with 0ddad21d3e99's split rd_wait/wr_wait queues \
          and exclusive waits, v5.6..v6.18): a write wakes one reader only if the pipe was empty, a read wakes \
          one writer only if it was full, and a woken task passes the wake-up on (linux/fs/pipe.rs)",
    apply: |k, v| PipeWait::parse(v).map(|w| k.fs.pipe_wait = w).ok_or(None),
}];
