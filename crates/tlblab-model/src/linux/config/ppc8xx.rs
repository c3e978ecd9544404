//! The MPC8xx knobs (arch/powerpc/kernel/head_8xx.S, arch/powerpc/mm): miss handlers, pinned entries, context-switch flushes, HZ, writeback.

use super::*;

pub(super) const KNOBS: &[Knob] = &[
    Knob {
        name: "head_8xx",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "2.4 | 2.6",
        doc: "MPC8xx: which head_8xx.S miss handlers (2.4.0 or 2.6.12-rc2) and which dd text/data layouts",
        apply: |k, v| Version::parse(v).map(|v| ppc(k).version = v).ok_or(None),
    },
    Knob {
        name: "pin_tlb",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "MPC8xx CONFIG_PIN_TLB: 8 MB ITLB/DTLB entries at KERNELBASE in the reserved slots (2.6)",
        apply: |k, v| on_off(v).map(|b| ppc(k).pin_tlb = b),
    },
    Knob {
        name: "lose_pinned",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "MPC8xx: the 2.6 bug of seed 003, a tlbie inside the first 8 MB drops the pinned entries",
        apply: |k, v| on_off(v).map(|b| ppc(k).lose_pinned = b),
    },
    Knob {
        name: "switch_tlbia",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "MPC8xx set_context empties the TLBs on a context switch (2.4.0: on; 2.6 ASIDs: off)",
        apply: |k, v| on_off(v).map(|b| ppc(k).switch_tlbia = b),
    },
    Knob {
        name: "hz",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "timer interrupts per second, 1..=10000",
        doc: "MPC8xx HZ (2.4: 100, 2.6: 1000)",
        apply: |k, v| match v.parse::<u32>() {
            Ok(h) if (1..=10_000).contains(&h) => {
                ppc(k).hz = h;
                Ok(())
            }
            _ => Err(None),
        },
    },
    Knob {
        name: "writeback",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "bdflush | pdflush | in-context",
        doc:
            "MPC8xx: who writes dirty pages back: 2.4's bdflush thread, 2.6's pdflush thread (woken over the background threshold), or the writer itself in balance_dirty_pages (2.6 over the dirty threshold)",
        apply: |k, v| {
            ppc(k).writeback = match v {
                "bdflush" => Writeback::Bdflush,
                "pdflush" => Writeback::Pdflush,
                "in-context" => Writeback::InContext,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "writeback_batch",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "pages, 1..=100000",
        doc: "MPC8xx: pages per writeback round (2.4 bdflush ndirty in pages; 2.6 the dirty pages pdflush finds per wake-up, or write_chunk in the writer's context)",
        apply: |k, v| match v.parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => {
                ppc(k).writeback_batch = n;
                Ok(())
            }
            _ => Err(None),
        },
    },
    Knob {
        name: "text_order",
        section: "ppc8xx",
        needed: Needed::Newer,
        allowed: "link | hot",
        doc: "MPC8xx: kernel text in link order, or dd's hot paths packed together (seed 003's unmeasured linker idea; off in every preset)",
        apply: |k, v| {
            ppc(k).text_order = match v {
                "link" => TextOrder::Link,
                "hot" => TextOrder::Hot,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "fget_light",
        section: "ppc8xx",
        needed: Needed::Newer,
        allowed: "call | inline",
        doc: "MPC8xx: fget_light out of line (2.6.12-rc2) or its fast path inline in sys_read/sys_write (seed 003's unmeasured remark; off in every preset)",
        apply: |k, v| {
            ppc(k).fget_light = match v {
                "call" => FgetLight::Call,
                "inline" => FgetLight::Inline,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "linear_8m",
        section: "ppc8xx",
        needed: Needed::Newer,
        allowed: "on | off",
        doc: "MPC8xx: kernel linear-map TLB misses load 8 MB entries on demand, no table walk (v4.14 head_8xx.S ITLBMissLinear/DTLBMissLinear), instead of 4 KB entries",
        apply: |k, v| on_off(v).map(|b| ppc(k).linear_8m = b),
    },
];
