//! The MPC8xx (`arch/ppc` of 2.4.0 and 2.6.12-rc2; `arch/powerpc` from 2.6.15): the software TLB
//! reload, the MMU as Linux drives it on a uniprocessor, the paths dd runs there, their text and
//! data layouts, and seed 003's TLB-miss counters. The 8xx's hardware (its TLBs and caches) is
//! in [`crate::hw::ppc8xx`].

pub mod data_layout;
pub mod kernel;
pub mod mm;
pub mod paths;
pub mod system_map;
pub mod tlbmiss;
