//! CPUID: identity, features and the TLB geometry the processor reports.
//!
//! Intel describes TLBs with one-byte descriptors in leaf 0x2 (Intel SDM vol. 2A, CPUID, table
//! "Encoding of CPUID Leaf 2 Descriptors") or, when leaf 0x2 says 0xFF, with one sub-leaf per
//! structure in leaf 0x18 ("Deterministic Address Translation Parameters"). AMD describes them in
//! 0x8000_0005 (L1), 0x8000_0006 (L2) and 0x8000_0019 (1G pages) (AMD APM vol. 3, appendix E).
//! Linux reads the same leaves (`intel_tlb_lookup()`, `cpu_detect_tlb_amd()`).
//!
//! A [`CpuidDump`] is the raw register values, readable from the host or from a recorded text
//! file, so every decoder is tested on samples (`tests/data/cpuid-*.txt`).

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Raw CPUID results keyed by (leaf, sub-leaf): `[eax, ebx, ecx, edx]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuidDump {
    pub regs: BTreeMap<(u32, u32), [u32; 4]>,
}

impl CpuidDump {
    pub fn get(&self, leaf: u32, sub: u32) -> Option<[u32; 4]> {
        self.regs.get(&(leaf, sub)).copied()
    }

    /// The highest basic and extended leaves, as leaf 0 / 0x8000_0000 report them.
    fn max_basic(&self) -> u32 {
        self.get(0, 0).map_or(0, |r| r[0])
    }

    fn max_ext(&self) -> u32 {
        self.get(0x8000_0000, 0).map_or(0, |r| r[0])
    }

    /// Reads the leaves the probe decodes from the running CPU.
    #[cfg(target_arch = "x86_64")]
    pub fn read_host() -> CpuidDump {
        use core::arch::x86_64::__cpuid_count;
        let mut d = CpuidDump::default();
        let mut q = |leaf: u32, sub: u32| {
            // SAFETY: CPUID exists on every x86_64 processor; reading a leaf has no side
            // effects. (Newer toolchains declare the intrinsic safe, older ones unsafe.)
            #[allow(unused_unsafe)]
            let r = unsafe { __cpuid_count(leaf, sub) };
            d.regs.insert((leaf, sub), [r.eax, r.ebx, r.ecx, r.edx]);
            [r.eax, r.ebx, r.ecx, r.edx]
        };
        let max = q(0, 0)[0];
        // 0x15 and 0x16: the TSC's crystal ratio and the nominal base frequency (the probe's
        // clock cross-check).
        for leaf in [1, 2, 7, 0x15, 0x16] {
            if leaf <= max {
                q(leaf, 0);
            }
        }
        if max >= 0x18 {
            let subs = q(0x18, 0)[0];
            for s in 1..=subs.min(32) {
                q(0x18, s);
            }
        }
        let hv = q(0x4000_0000, 0)[0];
        if hv >= 0x4000_0001 {
            q(0x4000_0001, 0);
        }
        // The hypervisor's timing leaf (TSC kHz), where the VMM fills it.
        if (0x4000_0010..0x4001_0000).contains(&hv) {
            q(0x4000_0010, 0);
        }
        let ext = q(0x8000_0000, 0)[0];
        for leaf in
            [0x8000_0002, 0x8000_0003, 0x8000_0004, 0x8000_0005, 0x8000_0006, 0x8000_0008, 0x8000_0019]
        {
            if leaf <= ext {
                q(leaf, 0);
            }
        }
        d
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn read_host() -> CpuidDump {
        CpuidDump::default()
    }

    /// One line per (leaf, sub-leaf): `0x80000005 0x0: eax ebx ecx edx` in hex.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for ((l, sub), r) in &self.regs {
            let _ = writeln!(s, "{l:#010x} {sub:#x}: {:08x} {:08x} {:08x} {:08x}", r[0], r[1], r[2], r[3]);
        }
        s
    }

    /// Parses [`CpuidDump::to_text`]'s format; `#` starts a comment. Errors name the line.
    pub fn parse(text: &str) -> Result<CpuidDump, String> {
        let mut d = CpuidDump::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap().trim();
            if line.is_empty() {
                continue;
            }
            let bad = |what: &str| {
                format!("line {}: {what}; expected `LEAF SUBLEAF: EAX EBX ECX EDX` in hex", n + 1)
            };
            let (key, vals) = line.split_once(':').ok_or_else(|| bad("no `:`"))?;
            let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16);
            let k: Vec<u32> =
                key.split_whitespace().map(hex).collect::<Result<_, _>>().map_err(|_| bad("bad leaf"))?;
            let v: Vec<u32> = vals
                .split_whitespace()
                .map(hex)
                .collect::<Result<_, _>>()
                .map_err(|_| bad("bad register"))?;
            if k.len() != 2 || v.len() != 4 {
                return Err(bad("wrong number of fields"));
            }
            d.regs.insert((k[0], k[1]), [v[0], v[1], v[2], v[3]]);
        }
        Ok(d)
    }

    /// `GenuineIntel`, `AuthenticAMD`, ...
    pub fn vendor(&self) -> String {
        self.get(0, 0).map_or_else(String::new, |r| regs_to_string(&[r[1], r[3], r[2]]))
    }

    /// Display family and model (the values Linux keys its tables on).
    pub fn family_model(&self) -> (u32, u32) {
        let Some(r) = self.get(1, 0) else { return (0, 0) };
        let eax = r[0];
        let base_family = (eax >> 8) & 0xf;
        let base_model = (eax >> 4) & 0xf;
        let family = if base_family == 0xf { base_family + ((eax >> 20) & 0xff) } else { base_family };
        let model = if base_family == 0x6 || base_family == 0xf {
            base_model | (((eax >> 16) & 0xf) << 4)
        } else {
            base_model
        };
        (family, model)
    }

    pub fn brand(&self) -> String {
        let regs: Vec<u32> =
            (0x8000_0002..=0x8000_0004).filter_map(|l| self.get(l, 0)).flat_map(|r| r.into_iter()).collect();
        regs_to_string(&regs).trim().to_string()
    }

    /// CPUID.1:ECX\[31\], set by hypervisors for their guests.
    pub fn hypervisor(&self) -> bool {
        self.get(1, 0).is_some_and(|r| r[2] >> 31 & 1 == 1)
    }

    /// The hypervisor's signature from leaf 0x4000_0000 (`KVMKVMKVM`, `Microsoft Hv`, ...).
    pub fn hypervisor_vendor(&self) -> Option<String> {
        if !self.hypervisor() {
            return None;
        }
        self.get(0x4000_0000, 0).map(|r| regs_to_string(&[r[1], r[2], r[3]]).trim().to_string())
    }

    /// KVM's paravirtual remote TLB flush (KVM_FEATURE_PV_TLB_FLUSH, CPUID 0x4000_0001 EAX\[9\]):
    /// the guest then skips the IPI to a preempted vCPU and lets the host flush it.
    pub fn kvm_pv_tlb_flush(&self) -> bool {
        self.hypervisor_vendor().is_some_and(|v| v.starts_with("KVMKVMKVM"))
            && self.get(0x4000_0001, 0).is_some_and(|r| r[0] >> 9 & 1 == 1)
    }

    pub fn pcid(&self) -> bool {
        self.get(1, 0).is_some_and(|r| r[2] >> 17 & 1 == 1)
    }

    pub fn invpcid(&self) -> bool {
        self.max_basic() >= 7 && self.get(7, 0).is_some_and(|r| r[1] >> 10 & 1 == 1)
    }

    /// AMD INVLPGB/TLBSYNC: CPUID 0x8000_0008 EBX\[3\].
    pub fn invlpgb(&self) -> bool {
        self.max_ext() >= 0x8000_0008 && self.get(0x8000_0008, 0).is_some_and(|r| r[1] >> 3 & 1 == 1)
    }

    /// Pages one INVLPGB may name: CPUID 0x8000_0008 EDX\[15:0\] + 1 (Linux v6.15
    /// `cpu_detect_tlb_amd`); 1 without INVLPGB.
    pub fn invlpgb_count_max(&self) -> u32 {
        match self.get(0x8000_0008, 0) {
            Some(r) if self.invlpgb() => (r[3] & 0xffff) + 1,
            _ => 1,
        }
    }
}

fn regs_to_string(regs: &[u32]) -> String {
    let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).filter(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Which accesses a TLB structure serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Serves {
    Instruction,
    Data,
    Unified,
    /// Intel leaf 0x18 type 4/5: a load-only or store-only DTLB.
    Load,
    Store,
}

/// One TLB structure as CPUID describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlbEntry {
    /// 1 = first level, 2 = second level.
    pub level: u8,
    pub serves: Serves,
    /// "4k", "2m", "4m", "1g".
    pub page_sizes: Vec<&'static str>,
    pub entries: u32,
    /// Associativity; equal to `entries` when fully associative.
    pub ways: u32,
    /// Which leaf and field said so.
    pub source: String,
}

/// The TLB table CPUID gives, with notes on what it could not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TlbGeometry {
    pub entries: Vec<TlbEntry>,
    pub notes: Vec<String>,
}

/// Decodes every TLB structure CPUID describes, for the vendor in the dump.
pub fn decode_tlbs(d: &CpuidDump) -> TlbGeometry {
    match d.vendor().as_str() {
        "AuthenticAMD" | "HygonGenuine" => decode_amd(d),
        "GenuineIntel" => decode_intel(d),
        "" => TlbGeometry { entries: vec![], notes: vec!["no CPUID on this architecture".into()] },
        v => TlbGeometry { entries: vec![], notes: vec![format!("vendor `{v}`: no TLB decoder")] },
    }
}

/// The ways of AMD's 4-bit L2 associativity code (APM vol. 3, CPUID Fn8000_0006); `None` for
/// "disabled" and reserved codes, `Some(0)` for fully associative.
fn amd_l2_ways(code: u32) -> Option<u32> {
    Some(match code {
        1 => 1,
        2 => 2,
        3 => 3,
        4 => 4,
        5 => 6,
        6 => 8,
        8 => 16,
        0xa => 32,
        0xb => 48,
        0xc => 64,
        0xd => 96,
        0xe => 128,
        0xf => 0,
        _ => return None,
    })
}

fn decode_amd(d: &CpuidDump) -> TlbGeometry {
    let mut g = TlbGeometry::default();
    let mut push = |level: u8, serves, size: &'static str, entries: u32, ways: u32, src: String| {
        if entries > 0 {
            let ways = if ways == 0 { entries } else { ways };
            g.entries.push(TlbEntry { level, serves, page_sizes: vec![size], entries, ways, source: src });
        }
    };
    // L1: 8-bit entry counts and 8-bit associativity, 0xFF = fully associative.
    let l1_ways = |a: u32| if a == 0xff { 0 } else { a };
    if let Some(r) = d.get(0x8000_0005, 0) {
        for (reg, name, size) in [(1usize, "EBX", "4k"), (0, "EAX", "2m")] {
            let v = r[reg];
            let src = |f: &str| format!("CPUID 0x80000005 {name}={v:08x} {f}");
            push(1, Serves::Data, size, v >> 16 & 0xff, l1_ways(v >> 24), src("[31:16] L1 DTLB"));
            push(1, Serves::Instruction, size, v & 0xff, l1_ways(v >> 8 & 0xff), src("[15:0] L1 ITLB"));
        }
    } else {
        g.notes.push("CPUID 0x80000005 absent: no L1 TLB description".into());
    }
    let l2 = |leaf: u32, regs: [(usize, &str, &'static str); 2], level: u8, g: &mut TlbGeometry| {
        let Some(r) = d.get(leaf, 0) else { return };
        for (reg, name, size) in regs {
            let v = r[reg];
            for (serves, entries, code, f) in [
                (Serves::Data, v >> 16 & 0xfff, v >> 28, "[31:16] DTLB"),
                (Serves::Instruction, v & 0xfff, v >> 12 & 0xf, "[15:0] ITLB"),
            ] {
                let src = format!("CPUID {leaf:#010x} {name}={v:08x} {f}");
                match amd_l2_ways(code) {
                    Some(w) if entries > 0 => {
                        let ways = if w == 0 { entries } else { w };
                        g.entries.push(TlbEntry {
                            level,
                            serves,
                            page_sizes: vec![size],
                            entries,
                            ways,
                            source: src,
                        })
                    }
                    _ if entries == 0 && code == 0 && size == "2m" && leaf == 0x8000_0006 => g.notes.push(
                        format!("{src}: 0, the 2M pages share the 4K structure (APM: unified when zero)"),
                    ),
                    _ => {}
                }
            }
        }
    };
    l2(0x8000_0006, [(1, "EBX", "4k"), (0, "EAX", "2m")], 2, &mut g);
    if d.max_ext() >= 0x8000_0019 {
        // Fn8000_0019 uses the L2 4-bit associativity encoding for both of its levels.
        l2(0x8000_0019, [(0, "EAX", "1g"), (0, "EAX", "1g")], 1, &mut g);
        l2(0x8000_0019, [(1, "EBX", "1g"), (1, "EBX", "1g")], 2, &mut g);
        g.entries.dedup();
    }
    g
}

/// (descriptor, level, serves, page sizes, entries, ways; 0 ways = fully associative), from
/// the Intel SDM's leaf-2 descriptor table (TLB rows only; cache and prefetch rows are skipped).
const INTEL_DESCRIPTORS: &[(u8, u8, Serves, &[&str], u32, u32)] = &[
    (0x01, 1, Serves::Instruction, &["4k"], 32, 4),
    (0x02, 1, Serves::Instruction, &["4m"], 2, 0),
    (0x03, 1, Serves::Data, &["4k"], 64, 4),
    (0x04, 1, Serves::Data, &["4m"], 8, 4),
    (0x05, 1, Serves::Data, &["4m"], 32, 4),
    (0x0b, 1, Serves::Instruction, &["4m"], 4, 4),
    (0x4f, 1, Serves::Instruction, &["4k"], 32, 0),
    (0x50, 1, Serves::Instruction, &["4k", "2m", "4m"], 64, 0),
    (0x51, 1, Serves::Instruction, &["4k", "2m", "4m"], 128, 0),
    (0x52, 1, Serves::Instruction, &["4k", "2m", "4m"], 256, 0),
    (0x55, 1, Serves::Instruction, &["2m", "4m"], 7, 0),
    (0x56, 1, Serves::Data, &["4m"], 16, 4),
    (0x57, 1, Serves::Data, &["4k"], 16, 4),
    (0x59, 1, Serves::Data, &["4k"], 16, 0),
    (0x5a, 1, Serves::Data, &["2m", "4m"], 32, 4),
    (0x5b, 1, Serves::Data, &["4k", "4m"], 64, 0),
    (0x5c, 1, Serves::Data, &["4k", "4m"], 128, 0),
    (0x5d, 1, Serves::Data, &["4k", "4m"], 256, 0),
    (0x61, 1, Serves::Instruction, &["4k"], 48, 0),
    (0x63, 1, Serves::Data, &["2m", "4m"], 32, 4),
    (0x64, 1, Serves::Data, &["4k"], 512, 4),
    (0x6a, 1, Serves::Data, &["4k"], 64, 8),
    (0x6b, 1, Serves::Data, &["4k"], 256, 8),
    (0x6c, 1, Serves::Data, &["2m", "4m"], 128, 8),
    (0x6d, 1, Serves::Data, &["1g"], 16, 0),
    (0x76, 1, Serves::Instruction, &["2m", "4m"], 8, 0),
    (0xa0, 1, Serves::Data, &["4k"], 32, 0),
    (0xb0, 1, Serves::Instruction, &["4k"], 128, 4),
    (0xb1, 1, Serves::Instruction, &["2m"], 8, 4),
    (0xb2, 1, Serves::Instruction, &["4k"], 64, 4),
    (0xb3, 1, Serves::Data, &["4k"], 128, 4),
    (0xb4, 1, Serves::Data, &["4k"], 256, 4),
    (0xb5, 1, Serves::Instruction, &["4k"], 64, 8),
    (0xb6, 1, Serves::Instruction, &["4k"], 128, 8),
    (0xba, 1, Serves::Data, &["4k"], 64, 4),
    (0xc0, 1, Serves::Data, &["4k", "4m"], 8, 4),
    (0xc1, 2, Serves::Unified, &["4k", "2m"], 1024, 8),
    (0xc2, 1, Serves::Data, &["4k", "2m"], 16, 4),
    (0xc3, 2, Serves::Unified, &["4k", "2m"], 1536, 6),
    (0xc4, 1, Serves::Data, &["2m", "4m"], 32, 4),
    (0xca, 2, Serves::Unified, &["4k"], 512, 4),
];

fn decode_intel(d: &CpuidDump) -> TlbGeometry {
    let mut g = TlbGeometry::default();
    let mut use_leaf_18 = false;
    match d.get(2, 0) {
        None => g.notes.push("CPUID leaf 0x2 absent".into()),
        Some(r) => {
            for (i, reg) in r.iter().enumerate() {
                // Bit 31 set: the register holds no descriptors. Byte 0 of EAX is the count.
                if reg >> 31 & 1 == 1 {
                    continue;
                }
                for (b, byte) in reg.to_le_bytes().into_iter().enumerate() {
                    if (i == 0 && b == 0) || byte == 0 {
                        continue;
                    }
                    // 0xFE: "leaf 2 does not report TLB descriptors, use leaf 0x18"; 0xFF is
                    // the same for caches (leaf 4) and says nothing about TLBs.
                    if byte == 0xfe {
                        use_leaf_18 = true;
                        continue;
                    }
                    if let Some(&(_, level, serves, sizes, entries, ways)) =
                        INTEL_DESCRIPTORS.iter().find(|e| e.0 == byte)
                    {
                        g.entries.push(TlbEntry {
                            level,
                            serves,
                            page_sizes: sizes.to_vec(),
                            entries,
                            ways: if ways == 0 { entries } else { ways },
                            source: format!("CPUID leaf 0x2 descriptor {byte:#04x} (Intel SDM leaf-2 table)"),
                        });
                    }
                }
            }
        }
    }
    if use_leaf_18 {
        g.notes.push("CPUID leaf 0x2 descriptor 0xfe: TLB parameters are in leaf 0x18".into());
        decode_leaf_18(d, &mut g);
    }
    g
}

fn decode_leaf_18(d: &CpuidDump, g: &mut TlbGeometry) {
    let Some(r0) = d.get(0x18, 0) else {
        g.notes.push("CPUID leaf 0x18 absent".into());
        return;
    };
    let before = g.entries.len();
    for sub in 0..=r0[0] {
        let Some([_, ebx, ecx, edx]) = d.get(0x18, sub) else { continue };
        let serves = match edx & 0x1f {
            1 => Serves::Data,
            2 => Serves::Instruction,
            3 => Serves::Unified,
            4 => Serves::Load,
            5 => Serves::Store,
            _ => continue, // 0: null sub-leaf
        };
        let sizes: Vec<&'static str> = [(0, "4k"), (1, "2m"), (2, "4m"), (3, "1g")]
            .iter()
            .filter(|(b, _)| ebx >> b & 1 == 1)
            .map(|x| x.1)
            .collect();
        let fully = edx >> 8 & 1 == 1;
        let ways = ebx >> 16;
        let sets = ecx;
        let entries = ways * sets;
        if entries == 0 {
            continue;
        }
        g.entries.push(TlbEntry {
            level: (edx >> 5 & 7) as u8,
            serves,
            page_sizes: sizes,
            entries,
            ways: if fully { entries } else { ways },
            source: format!("CPUID leaf 0x18 sub-leaf {sub}: EBX={ebx:08x} ECX={ecx:08x} EDX={edx:08x}"),
        });
    }
    if g.entries.len() == before {
        g.notes.push(
            "CPUID leaf 0x18 reads as zeros (common under hypervisors): no TLB geometry from CPUID".into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> CpuidDump {
        let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        CpuidDump::parse(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    #[test]
    fn text_round_trips() {
        let d = sample("cpuid-zen4-kvm.txt");
        assert_eq!(CpuidDump::parse(&d.to_text()).unwrap(), d);
        let e = CpuidDump::parse("0x1 0x0: 1 2 3\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("EAX EBX ECX EDX"), "{e}");
    }

    #[test]
    fn amd_zen4_under_kvm() {
        let d = sample("cpuid-zen4-kvm.txt");
        assert_eq!(d.vendor(), "AuthenticAMD");
        assert_eq!(d.family_model(), (25, 17));
        assert!(d.hypervisor());
        assert!(d.pcid() && d.invpcid() && !d.invlpgb());
        assert!(d.kvm_pv_tlb_flush(), "KVM_FEATURE_PV_TLB_FLUSH is bit 9 of 0x40000001 EAX");
        let g = decode_tlbs(&d);
        let find = |level, serves, size| {
            g.entries.iter().find(|e| e.level == level && e.serves == serves && e.page_sizes == [size])
        };
        // Zen 4: 72-entry fully associative L1 DTLB, 3072-entry L2 DTLB.
        let l1d = find(1, Serves::Data, "4k").expect("L1 DTLB 4K");
        assert_eq!((l1d.entries, l1d.ways), (72, 72));
        let l2d = find(2, Serves::Data, "4k").expect("L2 DTLB 4K");
        assert_eq!(l2d.entries, 3072);
        assert!(l2d.source.contains("0x80000006"));
    }

    #[test]
    fn intel_leaf2_descriptors() {
        // Ivy Bridge-EP leaf 2: 76036301 00f0b2ff 00000000 00ca0000 (0xff = "caches in leaf 4").
        let d = sample("cpuid-ivybridge-ep.txt");
        assert_eq!(d.family_model(), (6, 62));
        let g = decode_tlbs(&d);
        let has = |byte: &str| g.entries.iter().any(|e| e.source.contains(byte));
        assert!(has("0x63") && has("0x76") && has("0xb2") && has("0x03") && has("0xca"), "{g:?}");
        assert!(g.notes.is_empty(), "0xff is about caches, not TLBs: {:?}", g.notes);
        let stlb = g.entries.iter().find(|e| e.level == 2).unwrap();
        assert_eq!((stlb.entries, stlb.ways, stlb.serves), (512, 4, Serves::Unified));
    }

    #[test]
    fn intel_leaf18_and_its_empty_form_under_hypervisors() {
        let d = sample("cpuid-skylake-leaf18.txt");
        let g = decode_tlbs(&d);
        assert!(g.notes.iter().any(|n| n.contains("leaf 0x18")));
        let stlb = g.entries.iter().find(|e| e.level == 2).expect("STLB from leaf 0x18");
        assert_eq!((stlb.entries, stlb.ways), (1536, 12));
        let mut zero = d.clone();
        for (k, v) in zero.regs.iter_mut() {
            if k.0 == 0x18 && k.1 > 0 {
                *v = [0; 4];
            }
        }
        let g = decode_tlbs(&zero);
        assert!(g.entries.is_empty());
        assert!(g.notes.iter().any(|n| n.contains("reads as zeros")), "{:?}", g.notes);
    }
}
