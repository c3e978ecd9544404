//! `net/unix`: AF_UNIX stream sockets.

pub mod af_unix;
