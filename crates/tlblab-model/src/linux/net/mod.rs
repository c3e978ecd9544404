//! Networking (Linux's `net/`): loopback UDP and TCP sockets and AF_UNIX stream pairs.

pub mod core;
pub mod socket;
pub mod unix;
