use super::*;

fn t24() -> &'static str {
    crate::builtin::layout("linux-2.4-dd")
}
fn d24() -> &'static str {
    crate::builtin::layout("linux-2.4-dd-data")
}
fn t26() -> &'static str {
    crate::builtin::layout("linux-2.6-dd")
}
fn d26() -> &'static str {
    crate::builtin::layout("linux-2.6-dd-data")
}

fn text(t: &str) -> TextLayout {
    TextLayout::parse("t.toml", t).unwrap()
}

#[test]
fn shipped_data_layouts_parse_and_per_page_objects_advance_and_wrap() {
    for (t, d) in [(t24(), d24()), (t26(), d26())] {
        let l = DataLayout::parse("d.toml", d, &text(t)).unwrap_or_else(|e| panic!("{e}"));
        // clear_user stores zeros over the whole 4 KB user buffer, a word at a time (string.S of
        // both versions has no dcbz on 8xx); the write copies it into the page cache.
        let z = l.accesses("__clear_user");
        assert!(z.iter().any(|a| a.op == DataOp::Store && a.bytes == 4096));
        assert!(l.accesses("__copy_tofrom_user").iter().any(|a| matches!(a.op, DataOp::Copy { .. })));
        let pc = l.objects().iter().find(|o| o.name == "page_cache_page").unwrap();
        assert_eq!(pc.index, Index::Written);
        assert_eq!(pc.address(1) - pc.address(0), 4096);
        assert_eq!(pc.address(pc.span / pc.stride), pc.address(0), "frames are reused after span");
        assert!(l.objects().iter().all(|o| !o.basis.is_empty()));
    }
}

#[test]
fn bad_data_layouts_name_the_key_and_the_allowed_values() {
    let t = text(t26());
    let cases = [
        (
            d26().replacen("op = \"store\"", "op = \"dcbz\"", 1),
            "op = \"dcbz\": allowed values are [\"load\", \"store\", \"zero\", \"copy\"]",
        ),
        (
            d26().replacen("function = \"__clear_user\"", "function = \"clear_user\"", 1),
            "\"clear_user\" is not a function of layout linux-2.6-dd",
        ),
        (
            d26().replacen("index = \"written\"", "index = \"each\"", 1),
            "allowed values are [\"none\", \"written\", \"written-back\"]",
        ),
        (
            d26().replacen("object = \"user_buffer\"", "object = \"buffer\"", 1),
            "\"buffer\" is not an object; objects: kernel_stack",
        ),
        (d26().replacen("bytes = 0x1000", "bytes = 0x2000", 1), "must be word multiples inside the object"),
    ];
    for (d, want) in cases {
        let e = DataLayout::parse("d.toml", &d, &t).unwrap_err();
        assert!(e.starts_with("d.toml: ") && e.contains(want), "{e:?} should contain {want:?}");
    }
}

#[test]
fn hot_ordering_packs_the_hot_kernel_text_into_the_fewest_pages() {
    let l = text(t26());
    let paths = ["dd_read_user", "sys_read", "dd_write_user", "sys_write", "writeback", "timer_tick"];
    let before = l.footprint(paths).unwrap();
    let hot = l.hot_ordered(&paths).unwrap();
    let after = hot.footprint(paths).unwrap();
    let bytes: u64 = {
        let mut seen = std::collections::BTreeSet::new();
        paths
            .iter()
            .flat_map(|p| l.steps(p).unwrap())
            .filter(|f| f.is_kernel() && seen.insert(f.name.clone()))
            .map(|f| f.size + 16)
            .sum()
    };
    assert!(after.kernel_pages.len() as u64 <= bytes.div_ceil(4096), "{:?}", after.kernel_pages);
    assert!(after.kernel_pages.len() < before.kernel_pages.len());
    assert_eq!(after.user_pages, before.user_pages, "user text stays");
    // Still a valid layout (no overlaps), and an unknown path is refused by name.
    assert!(l.hot_ordered(&["sys_read", "nope"]).unwrap_err().0.contains("no path \"nope\""));
}
