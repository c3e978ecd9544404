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
    /// The CPU whose receive last freed each skb object, and that CPU's count of skb bytes
    /// freed when it did: its lines stay in that CPU's cache until a send on another CPU takes
    /// them back or the CPU has freed [`FREED_IN_CACHE`] more since
    /// (docs/references/linux-mm.md#socket-lines).
    pub(in crate::linux) freed_on: std::collections::HashMap<crate::linux::mm::slub::Object, (u32, u64)>,
    /// Per CPU, the skb bytes its receives have freed.
    pub(in crate::linux) freed_bytes: Vec<u64>,
    /// As `freed_on` for TCP's page-fragment pages (by pfn): the CPU whose receive last
    /// dropped an skb's reference to the page, having read its bytes there, and whether the
    /// page's reference count was written there since a send last took a reference.
    pub(in crate::linux) frag_freed_on: std::collections::HashMap<u64, (u32, u64, bool)>,
}

/// How much skb memory a CPU may free after an object before that object's lines count as gone
/// from its cache: a core's private L2, 1 MiB on Skylake-SP and later Intel server cores
/// (docs/references/machine-costs.md#fill-buffers), taken for every profile.
pub const FREED_IN_CACHE: u64 = 1 << 20;
