//! Where each CPU sits: socket, core, hardware thread. CPU ids follow the usual Linux x86
//! enumeration: first every core's first thread (socket by socket), then the SMT siblings, so
//! CPU `c` and CPU `c + cores` share a core.

use crate::hw::cpumask::CpuMask;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
}

/// How far apart two CPUs are, for cache-line transfers and IPIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    Same,
    SmtSibling,
    SameSocket,
    CrossSocket,
}

impl Topology {
    pub fn cpus(&self) -> u32 {
        self.cores() * self.threads_per_core
    }

    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// The global core index of `cpu`.
    pub fn core_of(&self, cpu: u32) -> u32 {
        // Subtraction instead of `%`: the engine asks this on every line transfer, and there
        // are only a few threads per core (a division costs more than the whole loop).
        let (mut c, n) = (cpu, self.cores());
        while c >= n {
            c -= n;
        }
        c
    }

    /// The (x2)APIC ID firmware gives `cpu`, in the layout CPUID leaf 0xB describes: the thread
    /// in the low bits, then the core within its package, then the package, each field as wide
    /// as its count needs. Assumes dense core IDs (some dies number their cores with gaps,
    /// which makes the core field wider).
    pub fn apic_id(&self, cpu: u32) -> u32 {
        let bits = |n: u32| 32 - n.saturating_sub(1).leading_zeros();
        let (smt, core_bits) = (bits(self.threads_per_core), bits(self.cores_per_socket));
        let thread = cpu / self.cores();
        let core = self.core_of(cpu);
        let (socket, core_in) = (core / self.cores_per_socket, core % self.cores_per_socket);
        (socket << (smt + core_bits)) | (core_in << smt) | thread
    }

    pub fn socket_of(&self, cpu: u32) -> u32 {
        self.socket_of_core(self.core_of(cpu))
    }

    /// The socket of global core `core` (subtractions, as [`Self::core_of`]).
    #[inline]
    fn socket_of_core(&self, mut core: u32) -> u32 {
        let mut socket = 0;
        while core >= self.cores_per_socket {
            core -= self.cores_per_socket;
            socket += 1;
        }
        socket
    }

    /// Every hardware thread of `socket`.
    pub fn socket_mask(&self, socket: u32) -> CpuMask {
        let mut m = CpuMask::new();
        let cores = self.cores();
        for t in 0..self.threads_per_core {
            let base = t * cores + socket * self.cores_per_socket;
            m.set_range(base, base + self.cores_per_socket);
        }
        m
    }

    /// How many CPUs of `set` are on socket `socket`: `set.and(&self.socket_mask(socket))`'s
    /// weight, without building the mask (the coherence model asks it on every read of a line
    /// with many sharers).
    pub fn in_socket(&self, set: &CpuMask, socket: u32) -> u32 {
        let cores = self.cores();
        (0..self.threads_per_core)
            .map(|t| {
                let base = t * cores + socket * self.cores_per_socket;
                set.count_range(base, base + self.cores_per_socket)
            })
            .sum()
    }

    /// Whether any CPU of `set` is on socket `socket`: [`Self::in_socket`] `> 0` without counting.
    pub fn any_in_socket(&self, set: &CpuMask, socket: u32) -> bool {
        let cores = self.cores();
        (0..self.threads_per_core).any(|t| {
            let base = t * cores + socket * self.cores_per_socket;
            set.any_range(base, base + self.cores_per_socket)
        })
    }

    /// How many CPUs of `set` are on `cpu`'s core: `set.and(&self.core_mask(cpu))`'s weight.
    pub fn in_core(&self, set: &CpuMask, cpu: u32) -> u32 {
        let (core, cores) = (self.core_of(cpu), self.cores());
        (0..self.threads_per_core).map(|t| set.contains(t * cores + core) as u32).sum()
    }

    /// Every hardware thread of `cpu`'s core, `cpu` included.
    pub fn core_mask(&self, cpu: u32) -> CpuMask {
        let mut m = CpuMask::new();
        let core = self.core_of(cpu);
        for t in 0..self.threads_per_core {
            m.set(t * self.cores() + core);
        }
        m
    }

    pub fn distance(&self, a: u32, b: u32) -> Distance {
        if a == b {
            return Distance::Same;
        }
        // Each CPU's core once (every IPI and line transfer asks this).
        let (ca, cb) = (self.core_of(a), self.core_of(b));
        if ca == cb {
            Distance::SmtSibling
        } else if self.socket_of_core(ca) == self.socket_of_core(cb) {
            Distance::SameSocket
        } else {
            Distance::CrossSocket
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apic_ids_put_threads_low_and_packages_high() {
        // Haswell-EP: 18 cores need 5 bits, so a package spans 64 IDs; siblings differ in bit 0.
        let t = Topology { sockets: 2, cores_per_socket: 18, threads_per_core: 2 };
        assert_eq!([t.apic_id(0), t.apic_id(1), t.apic_id(17), t.apic_id(36)], [0, 2, 34, 1]);
        assert_eq!([t.apic_id(18), t.apic_id(54)], [64, 65]);
        let ivb = Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 2 };
        assert_eq!((0..8).map(|c| ivb.apic_id(c)).collect::<Vec<_>>(), [0, 2, 4, 6, 1, 3, 5, 7]);
        let one = Topology { sockets: 2, cores_per_socket: 1, threads_per_core: 1 };
        assert_eq!([one.apic_id(0), one.apic_id(1)], [0, 1]);
    }

    #[test]
    fn linux_style_enumeration() {
        // 2 sockets x 2 cores x 2 threads: cpus 0-3 are first threads, 4-7 their siblings.
        let t = Topology { sockets: 2, cores_per_socket: 2, threads_per_core: 2 };
        assert_eq!(t.cpus(), 8);
        assert_eq!(t.distance(0, 4), Distance::SmtSibling);
        assert_eq!(t.distance(0, 1), Distance::SameSocket);
        assert_eq!(t.distance(0, 2), Distance::CrossSocket);
        assert_eq!(t.distance(1, 6), Distance::CrossSocket);
        assert_eq!(t.distance(3, 3), Distance::Same);
        assert_eq!(t.socket_mask(1).iter().collect::<Vec<_>>(), [2, 3, 6, 7]);
        assert_eq!(t.core_mask(5).iter().collect::<Vec<_>>(), [1, 5]);
    }

    #[test]
    fn counts_in_a_socket_or_core_are_the_masks_weights() {
        let mut seed = 7u64;
        for t in [
            Topology { sockets: 2, cores_per_socket: 28, threads_per_core: 2 },
            Topology { sockets: 2, cores_per_socket: 56, threads_per_core: 2 },
            Topology { sockets: 4, cores_per_socket: 24, threads_per_core: 4 },
            Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 1 },
        ] {
            for _ in 0..200 {
                let mut set = CpuMask::new();
                for c in 0..t.cpus() {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    if seed >> 61 == 0 {
                        set.set(c);
                    }
                }
                for s in 0..t.sockets {
                    assert_eq!(t.in_socket(&set, s), set.and(&t.socket_mask(s)).weight(), "{t:?} {s}");
                }
                for c in 0..t.cpus() {
                    assert_eq!(t.in_core(&set, c), set.and(&t.core_mask(c)).weight(), "{t:?} {c}");
                }
            }
        }
    }
}
