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
