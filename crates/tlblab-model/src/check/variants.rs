//! Every combination of the flush-protocol knobs the shootdown checker distinguishes.

use super::Variant;
use crate::linux::arch::x86::mm::tlb::RemoteDrain;
use crate::linux::config::KernelConfig;

/// Every combination of the flush-protocol knobs the checker distinguishes, on top of `base`:
/// generations, early return, `read_tlb_gen`, `lazy_ipis`, concurrent local flush, PCIDs
/// (only with generations, as at boot) and `remote_drain` (max-gen only with generations: it
/// drains by generation).
pub fn knob_variants(base: &KernelConfig) -> Vec<Variant> {
    use crate::linux::arch::x86::mm::tlb::{LazyIpis, ReadTlbGen};
    let mut out = Vec::new();
    for generations in [false, true] {
        for early_return in [false, true] {
            for read in [ReadTlbGen::Always, ReadTlbGen::WhenNeeded, ReadTlbGen::Never] {
                for lazy in [LazyIpis::Send, LazyIpis::Skip] {
                    for concurrent_local in [false, true] {
                        for pcid in if generations { &[false, true][..] } else { &[false][..] } {
                            let drains = if generations {
                                &[RemoteDrain::PerEntry, RemoteDrain::MaxGen][..]
                            } else {
                                &[RemoteDrain::PerEntry][..]
                            };
                            for &drain in drains {
                                let mut k = base.clone();
                                k.flush.generations = generations;
                                k.flush.early_return = early_return;
                                k.flush.read_tlb_gen = read;
                                k.flush.lazy_ipis = lazy;
                                k.flush.concurrent_local = concurrent_local;
                                k.flush.remote_drain = drain;
                                let mut v = Variant::of(&k, *pcid);
                                v.name = format!(
                                    "{} generations={} early_return={} read_tlb_gen={:?} lazy_ipis={:?} concurrent_local={} pcid={}{}",
                                    base.name,
                                    generations,
                                    early_return,
                                    read,
                                    lazy,
                                    concurrent_local,
                                    pcid,
                                    if drain == RemoteDrain::MaxGen { " remote_drain=max-gen" } else { "" }
                                );
                                out.push(v);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
