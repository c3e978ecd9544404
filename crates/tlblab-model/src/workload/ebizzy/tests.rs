use super::*;

fn task(p: EbizzyParams) -> EbizzyTask {
    EbizzyTask::new(p, EbizzyCosts::new(7500.0, 3400), 0x1000_0010, Arc::default(), 1, 0)
}

/// Runs `n` iterations; returns each iteration's ops.
fn iterations(t: &mut EbizzyTask, n: usize) -> Vec<Vec<Op>> {
    (0..n)
        .map(|_| {
            let mut ops = Vec::new();
            t.next(&mut ops);
            t.next(&mut ops);
            ops
        })
        .collect()
}

fn syscalls(ops: &[Op]) -> Vec<String> {
    ops.iter()
        .filter_map(|o| match o {
            Op::Mmap { len, .. } => Some(format!("mmap {}", len / PAGE)),
            Op::Munmap { .. } => Some("munmap".to_string()),
            Op::MadviseDontneed { len, .. } => Some(format!("madvise {}", len / PAGE)),
            _ => None,
        })
        .collect()
}

#[test]
fn ebizzy_0_3_lcg_never_leaves_zero() {
    let mut t = task(EbizzyParams::default());
    assert!((0..100).all(|_| t.rand(10, 0) == 0));
    let mut t = task(EbizzyParams { rand: RandSource::Seeded, ..Default::default() });
    let picks: Vec<u64> = (0..100).map(|_| t.rand(10, 0)).collect();
    assert!(picks.iter().any(|&c| c != 0) && picks.iter().all(|&c| c < 10));
}

#[test]
fn glibc_2_18_settles_on_96_page_trims() {
    let mut t = task(EbizzyParams::default());
    let it = iterations(&mut t, 4);
    // New arena (a 64 MiB heap, 161 pages of it in use), first free trims 128 pages; the second buffer is mmapped
    // (threshold still 128 KiB) and its free raises the threshold; then 96-page trims.
    assert_eq!(syscalls(&it[0]), ["mmap 16384", "madvise 128"]);
    assert_eq!(syscalls(&it[1]), ["mmap 129", "munmap"]);
    assert_eq!(syscalls(&it[2]), ["madvise 96"]);
    assert_eq!(syscalls(&it[3]), ["madvise 96"]);
}

#[test]
fn glibc_2_36_stops_making_syscalls() {
    let mut t = task(EbizzyParams { alloc: Alloc::Glibc236, ..Default::default() });
    let it = iterations(&mut t, 5);
    assert_eq!(syscalls(&it[0]), ["mmap 16384", "madvise 128"]);
    assert_eq!(syscalls(&it[1]), ["mmap 129", "munmap"]);
    assert!(syscalls(&it[2]).is_empty() && syscalls(&it[4]).is_empty());
}

#[test]
fn mmap_rules_map_129_or_128_pages() {
    let mut t = task(EbizzyParams { alloc: Alloc::GlibcMmap, ..Default::default() });
    for it in iterations(&mut t, 3) {
        assert_eq!(syscalls(&it), ["mmap 129", "munmap"]);
    }
    let mut t = task(EbizzyParams::from_args("-m").unwrap());
    for it in iterations(&mut t, 3) {
        assert_eq!(syscalls(&it), ["mmap 128", "munmap"]);
    }
}

#[test]
fn memcpy_touches_every_page_and_bsearch_the_pages_on_its_path() {
    let mut t = task(EbizzyParams::from_args("-m").unwrap());
    let ops = &iterations(&mut t, 1)[0];
    let stores: Vec<u64> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Access { addr, kind: AccessKind::Store } => Some(addr.offset / PAGE),
            _ => None,
        })
        .collect();
    assert_eq!(stores, (0..128).collect::<Vec<_>>());
    // Source chunk 0 at 0x1000_0010: 129 pages read.
    let loads = ops.iter().filter(|o| matches!(o, Op::Access { addr: Addr { reg: ABS, .. }, .. })).count();
    assert_eq!(loads, 129);
    // Key 0: probes at records 32768, 16384, ..., 1, 0 = 17 probes.
    let probes = ops
        .iter()
        .filter(|o| matches!(o, Op::Access { addr: Addr { reg: BUF, .. }, kind: AccessKind::Load }))
        .count();
    assert_eq!(probes, 17);
    // Copy time: 512 KiB at 7.5 GB/s = 69.9 us, 1 MiB of traffic (read + write), streaming from
    // the 10 chunks (one shared region) into the 512 KiB buffer (hw/uncore.rs).
    let (mut copy, mut bytes) = (0, 0);
    for o in ops {
        if let Op::Stream { core, bytes: b, src, src_len, dst, dst_len } = *o {
            copy += core.0;
            bytes += b;
            assert_eq!((src.reg, src_len), (ABS, 10 * t.stride));
            assert_eq!((dst.reg, dst_len), (BUF, 512 << 10));
        }
    }
    assert!((69_900_000..70_000_000).contains(&copy), "{copy}");
    assert_eq!(bytes, 2 * (512 << 10));
}

#[test]
fn options_parse_and_bad_ones_say_what_is_allowed() {
    let p = EbizzyParams::from_args("-n 4 -s 65536 -T -z alloc=glibc-2.36 rand=seeded").unwrap();
    assert_eq!((p.chunks, p.chunk_size, p.touch_only, p.linear), (4, 65536, true, true));
    assert_eq!(EbizzyParams::from_args(&p.describe()[6..]).unwrap(), p);
    assert!(EbizzyParams::from_args("-m -M").unwrap_err().contains("never mmap"));
    let e = EbizzyParams::from_args("alloc=jemalloc").unwrap_err();
    assert!(e.contains("glibc-2.18 | glibc-mmap"), "{e}");
    assert!(EbizzyParams::from_args("-q").unwrap_err().contains("-m -M -n N"));
}
