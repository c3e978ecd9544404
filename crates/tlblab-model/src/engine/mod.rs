//! The discrete-event engine (DESIGN.md rule 3): integer time, one event queue, deterministic
//! tie-breaks. CPUs keep local clocks; the engine always advances the earliest CPU or event.

pub mod queue;
pub mod time;
