//! Networking (Linux's `net/`): loopback UDP and TCP sockets and AF_UNIX stream pairs.

pub mod core;
pub mod ipv4;
pub mod socket;
pub mod unix;

/// Networking's state.
pub struct Net {
    /// Loopback sockets, on a machine with SLUB and a `[net]` section (linux/net/socket.rs).
    pub(in crate::linux) sockets: Option<socket::Sockets>,
    /// AF_UNIX stream pairs (linux/net/unix/af_unix.rs), by id.
    pub(in crate::linux) unix: Vec<unix::af_unix::UnixPair>,
}
