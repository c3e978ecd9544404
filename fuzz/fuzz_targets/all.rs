//! One binary for every target of `tlblab::fuzz`; `TLBLAB_FUZZ_TARGET` names the one to run
//! (`scripts/fuzz.sh TARGET SECONDS` sets it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static TARGET: OnceLock<fn(&[u8])> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let run = TARGET.get_or_init(|| {
        let name = std::env::var("TLBLAB_FUZZ_TARGET").unwrap_or_default();
        tlblab::fuzz::target(&name).unwrap_or_else(|| {
            let names: Vec<&str> = tlblab::fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
            panic!("TLBLAB_FUZZ_TARGET=`{name}`: allowed {}", names.join(", "))
        })
    });
    run(data)
});
