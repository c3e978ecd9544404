//! `include/linux`: the page allocator's entry points (`gfp.h`) and data structures
//! (`mmzone.h`), and address spaces (`mm_types.h`).

pub mod gfp;
pub mod mm_types;
pub mod mmzone;
