//! The discrete-event engine (DESIGN.md rule 3): integer time, one event queue, deterministic
//! tie-breaks. CPUs keep local clocks; the engine always advances the earliest CPU or event.

pub mod ops;
pub mod queue;
pub mod sim;
pub mod time;

/// A task's operation stream: called whenever the task has nothing queued.
pub trait Program: Send {
    /// Appends the next operations (one loop iteration, or a setup step).
    fn next(&mut self, out: &mut Vec<ops::Op>);
}
