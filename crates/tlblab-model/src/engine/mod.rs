//! The discrete-event engine (docs/design.md#engine): integer time, one event queue, deterministic
//! tie-breaks. CPUs keep local clocks; the engine always advances the earliest CPU or event, and
//! hands the kernel each step through `linux::ctx::Ctx`.

pub mod noise;
pub mod queue;
pub mod sim;
pub mod timeline;
