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
    /// The CPU whose receive last freed each skb object: its lines are in that CPU's cache
    /// until a send on another CPU takes them back (docs/references/linux-mm.md#socket-lines).
    pub(in crate::linux) freed_on: std::collections::HashMap<crate::linux::mm::slub::Object, u32>,
}
