//! The handlers' instructions, transcribed from `arch/ppc/kernel/head_8xx.S` of 2.4.0
//! (`Robin329/Linux-2.4.0`) and 2.6.12-rc2 (`torvalds/linux` 1da177e4) in text order, every
//! instruction of the success path with its `#ifdef CONFIG_8xx_CPU6` ones flagged. The bail-out
//! tails (`2:` restore and branch to `InstructionAccess`/`DataAccess`) are not listed: `handle`
//! charges them when a walk fails.

use super::{Handler, Insn, Op, Version};

const fn i(op: Op, text: &'static str) -> Insn {
    Insn { op, text, kernel_only: false, cpu6: false }
}
const fn k(op: Op, text: &'static str) -> Insn {
    Insn { op, text, kernel_only: true, cpu6: false }
}
/// One `DO_8xx_CPU6(val, r3)`: li, stw, lwz at 12(r0).
macro_rules! cpu6 {
    () => {
        [
            Insn { op: Op::Alu, text: "li r3,<spr code>", kernel_only: false, cpu6: true },
            Insn { op: Op::StoreScratch(12), text: "stw r3,12(r0)", kernel_only: false, cpu6: true },
            Insn { op: Op::LoadScratch(12), text: "lwz r3,12(r0)", kernel_only: false, cpu6: true },
        ]
    };
}

/// Flatten fixed arrays at compile time.
const fn cat<const N: usize>(parts: &[&[Insn]]) -> [Insn; N] {
    let mut out = [i(Op::Alu, ""); N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut j = 0;
        while j < parts[p].len() {
            out[n] = parts[p][j];
            n += 1;
            j += 1;
        }
        p += 1;
    }
    assert!(n == N);
    out
}

const SAVE_CPU6: Insn =
    Insn { op: Op::StoreScratch(8), text: "stw r3,8(r0)", kernel_only: false, cpu6: true };
const RESTORE_CPU6: Insn =
    Insn { op: Op::LoadScratch(8), text: "lwz r3,8(r0)", kernel_only: false, cpu6: true };

// --- 2.4.0 ------------------------------------------------------------------------------------

static ITLB_24: [Insn; 46] = cat(&[
    &[SAVE_CPU6],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr M_TW,r20"),
        i(Op::Alu, "mfcr r20"),
        i(Op::StoreScratch(0), "stw r20,0(r0)"),
        i(Op::StoreScratch(4), "stw r21,4(r0)"),
        i(Op::Mfspr, "mfspr r20,SRR0"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr MD_EPN,r20"),
        i(Op::Mfspr, "mfspr r20,M_TWB"),
        i(Op::Alu, "andi. r21,r20,0x0800"),
        i(Op::BranchUser, "beq 3f"),
        k(Op::Alu, "lis r21,swapper_pg_dir@h"),
        k(Op::Alu, "ori r21,r21,swapper_pg_dir@l"),
        k(Op::Alu, "rlwimi r20,r21,0,2,19"),
        i(Op::LoadL1, "lwz r21,0(r20)"),
        i(Op::Alu, "rlwinm. r20,r21,0,0,19"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "tophys(r21,r21)"),
        i(Op::Alu, "ori r21,r21,1"),
    ],
    &cpu6!(),
    &[i(Op::Mtspr, "mtspr MI_TWC,r21")],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr MD_TWC,r21"),
        i(Op::Mfspr, "mfspr r21,MD_TWC"),
        i(Op::LoadPte, "lwz r20,0(r21)"),
        i(Op::Alu, "li r21,0x00f0"),
        i(Op::Alu, "rlwimi r20,r21,0,24,28"),
    ],
    &cpu6!(),
    &[
        i(Op::MtsprRpn, "mtspr MI_RPN,r20"),
        i(Op::Mfspr, "mfspr r20,M_TW"),
        i(Op::LoadScratch(0), "lwz r21,0(r0)"),
        i(Op::Alu, "mtcr r21"),
        i(Op::LoadScratch(4), "lwz r21,4(r0)"),
        RESTORE_CPU6,
        i(Op::Rfi, "rfi"),
    ],
]);

static DTLB_24: [Insn; 42] = cat(&[
    &[SAVE_CPU6],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr M_TW,r20"),
        i(Op::Alu, "mfcr r20"),
        i(Op::StoreScratch(0), "stw r20,0(r0)"),
        i(Op::StoreScratch(4), "stw r21,4(r0)"),
        i(Op::Mfspr, "mfspr r20,M_TWB"),
        i(Op::Alu, "andi. r21,r20,0x0800"),
        i(Op::BranchUser, "beq 3f"),
        k(Op::Alu, "lis r21,swapper_pg_dir@h"),
        k(Op::Alu, "ori r21,r21,swapper_pg_dir@l"),
        k(Op::Alu, "rlwimi r20,r21,0,2,19"),
        i(Op::LoadL1, "lwz r21,0(r20)"),
        i(Op::Alu, "rlwinm. r20,r21,0,0,19"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "tophys(r21,r21)"),
        i(Op::Alu, "ori r21,r21,1"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr MD_TWC,r21"),
        i(Op::Mfspr, "mfspr r20,MD_TWC"),
        i(Op::LoadPte, "lwz r20,0(r20)"),
        i(Op::Alu, "rlwimi r21,r20,0,27,27"),
    ],
    &cpu6!(),
    &[i(Op::Mtspr, "mtspr MD_TWC,r21"), i(Op::Alu, "li r21,0x00f0"), i(Op::Alu, "rlwimi r20,r21,0,24,28")],
    &cpu6!(),
    &[
        i(Op::MtsprRpn, "mtspr MD_RPN,r20"),
        i(Op::Mfspr, "mfspr r20,M_TW"),
        i(Op::LoadScratch(0), "lwz r21,0(r0)"),
        i(Op::Alu, "mtcr r21"),
        i(Op::LoadScratch(4), "lwz r21,4(r0)"),
        RESTORE_CPU6,
        i(Op::Rfi, "rfi"),
    ],
]);

static DTLBERR_24: [Insn; 45] = cat(&[
    &[SAVE_CPU6],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr M_TW,r20"),
        i(Op::Alu, "mfcr r20"),
        i(Op::StoreScratch(0), "stw r20,0(r0)"),
        i(Op::StoreScratch(4), "stw r21,4(r0)"),
        i(Op::Mfspr, "mfspr r20,DSISR"),
        i(Op::Alu, "andis. r21,r20,0x0200"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Mfspr, "mfspr r20,M_TWB"),
        i(Op::Alu, "andi. r21,r20,0x0800"),
        i(Op::BranchUser, "beq 3f"),
        k(Op::Alu, "lis r21,swapper_pg_dir@h"),
        k(Op::Alu, "ori r21,r21,swapper_pg_dir@l"),
        k(Op::Alu, "rlwimi r20,r21,0,2,19"),
        i(Op::LoadL1, "lwz r21,0(r20)"),
        i(Op::Alu, "rlwinm. r20,r21,0,0,19"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "tophys(r21,r21)"),
        i(Op::Alu, "ori r21,r21,1"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr MD_TWC,r21"),
        i(Op::Mfspr, "mfspr r21,MD_TWC"),
        i(Op::LoadPte, "lwz r20,0(r21)"),
        i(Op::Alu, "andi. r21,r20,_PAGE_RW"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "ori r20,r20,_PAGE_DIRTY|_PAGE_HWWRITE|_PAGE_ACCESSED"),
        i(Op::Mfspr, "mfspr r21,MD_TWC"),
        i(Op::StorePte, "stw r20,0(r21)"),
        i(Op::Alu, "li r21,0x00f0"),
        i(Op::Alu, "rlwimi r20,r21,0,24,28"),
    ],
    &cpu6!(),
    &[
        i(Op::MtsprRpn, "mtspr MD_RPN,r20"),
        i(Op::Mfspr, "mfspr r20,M_TW"),
        i(Op::LoadScratch(0), "lwz r21,0(r0)"),
        i(Op::Alu, "mtcr r21"),
        i(Op::LoadScratch(4), "lwz r21,4(r0)"),
        RESTORE_CPU6,
        i(Op::Rfi, "rfi"),
    ],
]);

// --- 2.6.12-rc2 -------------------------------------------------------------------------------

static ITLB_26: [Insn; 47] = cat(&[
    &[SAVE_CPU6],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_M_TW,r10"),
        i(Op::Alu, "mfcr r10"),
        i(Op::StoreScratch(0), "stw r10,0(r0)"),
        i(Op::StoreScratch(4), "stw r11,4(r0)"),
        i(Op::Mfspr, "mfspr r10,SPRN_SRR0"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_MD_EPN,r10"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_TWB"),
        i(Op::Alu, "andi. r11,r10,0x0800"),
        i(Op::BranchUser, "beq 3f"),
        k(Op::Alu, "lis r11,swapper_pg_dir@h"),
        k(Op::Alu, "ori r11,r11,swapper_pg_dir@l"),
        k(Op::Alu, "rlwimi r10,r11,0,2,19"),
        i(Op::LoadL1, "lwz r11,0(r10)"),
        i(Op::Alu, "rlwinm. r10,r11,0,0,19"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "ori r11,r11,1"),
    ],
    &cpu6!(),
    &[i(Op::Mtspr, "mtspr SPRN_MI_TWC,r11")],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_MD_TWC,r11"),
        i(Op::Mfspr, "mfspr r11,SPRN_MD_TWC"),
        i(Op::LoadPte, "lwz r10,0(r11)"),
        i(Op::Alu, "ori r10,r10,_PAGE_ACCESSED"),
        i(Op::StorePte, "stw r10,0(r11)"),
        i(Op::Alu, "li r11,0x00f0"),
        i(Op::Alu, "rlwimi r10,r11,0,24,28"),
    ],
    &cpu6!(),
    &[
        i(Op::MtsprRpn, "mtspr SPRN_MI_RPN,r10"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_TW"),
        i(Op::LoadScratch(0), "lwz r11,0(r0)"),
        i(Op::Alu, "mtcr r11"),
        i(Op::LoadScratch(4), "lwz r11,4(r0)"),
        RESTORE_CPU6,
        i(Op::Rfi, "rfi"),
    ],
]);

static DTLB_26: [Insn; 44] = cat(&[
    &[SAVE_CPU6],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_M_TW,r10"),
        i(Op::Alu, "mfcr r10"),
        i(Op::StoreScratch(0), "stw r10,0(r0)"),
        i(Op::StoreScratch(4), "stw r11,4(r0)"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_TWB"),
        i(Op::Alu, "andi. r11,r10,0x0800"),
        i(Op::BranchUser, "beq 3f"),
        k(Op::Alu, "lis r11,swapper_pg_dir@h"),
        k(Op::Alu, "ori r11,r11,swapper_pg_dir@l"),
        k(Op::Alu, "rlwimi r10,r11,0,2,19"),
        i(Op::LoadL1, "lwz r11,0(r10)"),
        i(Op::Alu, "rlwinm. r10,r11,0,0,19"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "ori r11,r11,1"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_MD_TWC,r11"),
        i(Op::Mfspr, "mfspr r10,SPRN_MD_TWC"),
        i(Op::LoadPte, "lwz r10,0(r10)"),
        i(Op::Alu, "rlwimi r11,r10,0,27,27"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_MD_TWC,r11"),
        i(Op::Mfspr, "mfspr r11,SPRN_MD_TWC"),
        i(Op::Alu, "ori r10,r10,_PAGE_ACCESSED"),
        i(Op::StorePte, "stw r10,0(r11)"),
        i(Op::Alu, "li r11,0x00f0"),
        i(Op::Alu, "rlwimi r10,r11,0,24,28"),
    ],
    &cpu6!(),
    &[
        i(Op::MtsprRpn, "mtspr SPRN_MD_RPN,r10"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_TW"),
        i(Op::LoadScratch(0), "lwz r11,0(r0)"),
        i(Op::Alu, "mtcr r11"),
        i(Op::LoadScratch(4), "lwz r11,4(r0)"),
        RESTORE_CPU6,
        i(Op::Rfi, "rfi"),
    ],
]);

static DTLBERR_26: [Insn; 53] = cat(&[
    &[SAVE_CPU6],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_M_TW,r10"),
        i(Op::Alu, "mfcr r10"),
        i(Op::StoreScratch(0), "stw r10,0(r0)"),
        i(Op::StoreScratch(4), "stw r11,4(r0)"),
        i(Op::Mfspr, "mfspr r10,SPRN_DSISR"),
        i(Op::Alu, "andis. r11,r10,0x0200"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Mfspr, "mfspr r10,SPRN_DAR"),
        i(Op::Alu, "rlwinm r11,r10,0,0,19"),
        i(Op::Alu, "ori r11,r11,MD_EVALID"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_CASID"),
        i(Op::Alu, "rlwimi r11,r10,0,28,31"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_MD_EPN,r11"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_TWB"),
        i(Op::Alu, "andi. r11,r10,0x0800"),
        i(Op::BranchUser, "beq 3f"),
        k(Op::Alu, "lis r11,swapper_pg_dir@h"),
        k(Op::Alu, "ori r11,r11,swapper_pg_dir@l"),
        k(Op::Alu, "rlwimi r10,r11,0,2,19"),
        i(Op::LoadL1, "lwz r11,0(r10)"),
        i(Op::Alu, "rlwinm. r10,r11,0,0,19"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "ori r11,r11,1"),
    ],
    &cpu6!(),
    &[
        i(Op::Mtspr, "mtspr SPRN_MD_TWC,r11"),
        i(Op::Mfspr, "mfspr r11,SPRN_MD_TWC"),
        i(Op::LoadPte, "lwz r10,0(r11)"),
        i(Op::Alu, "andi. r11,r10,_PAGE_RW"),
        i(Op::BranchBail, "beq 2f"),
        i(Op::Alu, "ori r10,r10,_PAGE_DIRTY|_PAGE_ACCESSED|_PAGE_HWWRITE"),
        i(Op::Mfspr, "mfspr r11,SPRN_MD_TWC"),
        i(Op::StorePte, "stw r10,0(r11)"),
        i(Op::Alu, "li r11,0x00f0"),
        i(Op::Alu, "rlwimi r10,r11,0,24,28"),
    ],
    &cpu6!(),
    &[
        i(Op::MtsprRpn, "mtspr SPRN_MD_RPN,r10"),
        i(Op::Mfspr, "mfspr r10,SPRN_M_TW"),
        i(Op::LoadScratch(0), "lwz r11,0(r0)"),
        i(Op::Alu, "mtcr r11"),
        i(Op::LoadScratch(4), "lwz r11,4(r0)"),
        RESTORE_CPU6,
        i(Op::Rfi, "rfi"),
    ],
]);

/// The instructions of `handler` in `version`, in text order, including kernel-only and CPU6
/// instructions (flagged). What a given miss executes is `path`.
pub fn handler(version: Version, handler: Handler) -> &'static [Insn] {
    match (version, handler) {
        (Version::V2_4, Handler::InstructionTlbMiss) => &ITLB_24,
        (Version::V2_4, Handler::DataTlbMiss) => &DTLB_24,
        (Version::V2_4, Handler::DataTlbError) => &DTLBERR_24,
        (Version::V2_6, Handler::InstructionTlbMiss) => &ITLB_26,
        (Version::V2_6, Handler::DataTlbMiss) => &DTLB_26,
        (Version::V2_6, Handler::DataTlbError) => &DTLBERR_26,
    }
}

// --- v4.14: the kernel linear map by 8 MB entries, no table walk ------------------------------
//
// arch/powerpc/kernel/head_8xx.S of v4.14 (4 KB pages, no CONFIG_PIN_TLB_TEXT, so
// ITLB_MISS_KERNEL; no CPU6, CPU15, perf counters): a miss whose EA lies in the linear map
// (ITLB: KERNELBASE + 8 MB, "kernel code fits into the first 8M page"; DTLB: up to the end of
// lowmem, `DTLBMiss_cmp` patched at boot) branches to `ITLBMissLinear` / `DTLBMissLinear`,
// which write an 8 MB entry straight from the EA: no level-1 or PTE load, the scratch registers
// are SPRGs, not memory. Each table is the vector part then the tail after 0x2000 ([`linear`]
// says where the tail starts). Saving to an SPRG is costed as an MMU `mtspr` (conservative).

static ITLB_LINEAR_414: [Insn; 21] = [
    i(Op::Mtspr, "mtspr SPRG_SCRATCH2,r3"),
    i(Op::Mtspr, "mtspr SPRG_SCRATCH0,r10"),
    i(Op::Mtspr, "mtspr SPRG_SCRATCH1,r11"),
    i(Op::Mfspr, "mfspr r10,SRR0"),
    i(Op::Alu, "mfcr r3"),
    i(Op::Alu, "rlwinm r11,r10,16,0xfff8"),
    i(Op::Alu, "cmpli cr0,r11,PAGE_OFFSET@h"),
    i(Op::Alu, "cmpli cr7,r11,(PAGE_OFFSET+0x800000)@h"),
    i(Op::Mfspr, "mfspr r11,M_TW"),
    i(Op::Alu, "blt+ 3f"),
    i(Op::BranchTaken, "blt cr7,ITLBMissLinear"),
    // ITLBMissLinear:
    i(Op::Alu, "mtcr r3"),
    i(Op::Alu, "li r11,MI_PS8MEG|MI_SVALID|_PAGE_EXEC"),
    i(Op::Mtspr, "mtspr MI_TWC,r11"),
    i(Op::Alu, "rlwinm r10,r10,0,0x0f800000"),
    i(Op::Alu, "ori r10,r10,0xf0|MI_SPS16K|_PAGE_SHARED|_PAGE_DIRTY|_PAGE_PRESENT"),
    i(Op::MtsprRpn, "mtspr MI_RPN,r10"),
    i(Op::Mfspr, "mfspr r3,SPRG_SCRATCH2"),
    i(Op::Mfspr, "mfspr r10,SPRG_SCRATCH0"),
    i(Op::Mfspr, "mfspr r11,SPRG_SCRATCH1"),
    i(Op::Rfi, "rfi"),
];

static DTLB_LINEAR_414: [Insn; 26] = [
    i(Op::Mtspr, "mtspr SPRG_SCRATCH2,r3"),
    i(Op::Mtspr, "mtspr SPRG_SCRATCH0,r10"),
    i(Op::Mtspr, "mtspr SPRG_SCRATCH1,r11"),
    i(Op::Alu, "mfcr r3"),
    i(Op::Mfspr, "mfspr r10,MD_EPN"),
    i(Op::Alu, "rlwinm r11,r10,16,0xfff8"),
    i(Op::Alu, "cmpli cr0,r11,PAGE_OFFSET@h"),
    i(Op::Mfspr, "mfspr r11,M_TW"),
    i(Op::Alu, "blt+ 3f"),
    i(Op::Alu, "rlwinm r11,r10,16,0xfff8"),
    i(Op::Alu, "cmpli cr0,r11,VIRT_IMMR_BASE@h"),
    i(Op::Alu, "cmpli cr7,r11,(PAGE_OFFSET+lowmem)@h"),
    i(Op::Alu, "beq- DTLBMissIMMR"),
    i(Op::BranchTaken, "blt cr7,DTLBMissLinear"),
    // DTLBMissLinear:
    i(Op::Alu, "mtcr r3"),
    i(Op::Alu, "li r11,MD_PS8MEG|MD_SVALID"),
    i(Op::Mtspr, "mtspr MD_TWC,r11"),
    i(Op::Alu, "rlwinm r10,r10,0,0x0f800000"),
    i(Op::Alu, "ori r10,r10,0xf0|MD_SPS16K|_PAGE_SHARED|_PAGE_DIRTY|_PAGE_PRESENT"),
    i(Op::MtsprRpn, "mtspr MD_RPN,r10"),
    i(Op::Alu, "li r11,RPN_PATTERN"),
    i(Op::Mtspr, "mtspr DAR,r11"),
    i(Op::Mfspr, "mfspr r3,SPRG_SCRATCH2"),
    i(Op::Mfspr, "mfspr r10,SPRG_SCRATCH0"),
    i(Op::Mfspr, "mfspr r11,SPRG_SCRATCH1"),
    i(Op::Rfi, "rfi"),
];

/// The v4.14 linear-map path of a miss handler: its instructions, the index where the tail
/// begins and the tail's physical address. v4.14 puts the tails after 0x2000 ("not enough space
/// in the DataStoreTLBMiss area"): `DTLBMissIMMR` (13 instructions), `DTLBMissLinear` (12), then
/// `ITLBMissLinear`. `None` for `DataTLBError`, which has none (a linear entry is written dirty).
pub fn linear(handler: Handler) -> Option<(&'static [Insn], usize, u32)> {
    match handler {
        Handler::InstructionTlbMiss => Some((&ITLB_LINEAR_414, 11, 0x2000 + 4 * 25)),
        Handler::DataTlbMiss => Some((&DTLB_LINEAR_414, 14, 0x2000 + 4 * 13)),
        Handler::DataTlbError => None,
    }
}
