//! Linux's `include/`: the headers whose types and entry points several subsystems share.

pub mod linux;
