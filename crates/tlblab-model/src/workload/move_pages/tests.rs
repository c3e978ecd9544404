use super::*;

#[test]
fn parses_and_refuses_bad_parameters() {
    let w = MovePages::parse("move-pages size_kib=64 loops=10 cpu=4").unwrap().unwrap();
    assert_eq!(w, MovePages(RegionLoop { size_kib: 64, loops: 10, cpu: 4 }));
    assert_eq!(MovePages::parse("move-pages").unwrap().unwrap().name(), "move-pages");
    assert!(MovePages::parse("move-pages size_kib=4096").unwrap().is_err());
    assert!(MovePages::parse("move-pages foo=1").unwrap().is_err());
    assert!(MovePages::parse("madv-pageout").is_none());
}

#[test]
fn refuses_a_machine_of_one_node() {
    let e = MovePages::default().check_run(&crate::profile::shipped("snapdragon888"), 1).unwrap_err();
    assert!(e.starts_with("move-pages: snapdragon888 has one node"), "{e}");
}
