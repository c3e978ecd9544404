//! `net/core`: what sends allocate and receives free (`skbuff.c`, `sock.c`).

pub mod skbuff;
pub mod sock;
