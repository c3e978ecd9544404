//! How big a cache's slabs and objects are (mm/slub.c v4.9 `calculate_order`, `slab_order`;
//! mm/slab_common.c `calculate_alignment` for SLAB_HWCACHE_ALIGN).

use super::*;

/// `slab_order()` (v4.9): the smallest order from `get_order(min_objects * size)` up to
/// `max_order` whose leftover is at most `1 / fract_leftover` of the slab.
fn slab_order(size: u64, min_objects: u64, max_order: u8, fract_leftover: u64) -> u8 {
    let mut order = get_order(min_objects * size);
    while order <= max_order {
        let slab = 4096u64 << order;
        if slab % size <= slab / fract_leftover {
            break;
        }
        order += 1;
    }
    order
}

/// `calculate_order()` (v4.9): `min_objects = 4 * (fls(nr_cpu_ids) + 1)` capped by what fits at
/// `slub_max_order`; first allow more waste (1/16, 1/8, 1/4), then fewer objects.
pub fn calculate_order(size: u64, nr_cpu_ids: u32) -> u8 {
    let max_objects = (4096u64 << SLUB_MAX_ORDER) / size;
    let mut min_objects = (4 * (fls(nr_cpu_ids as u64) as u64 + 1)).min(max_objects);
    while min_objects > 1 {
        let mut fraction = 16;
        while fraction >= 4 {
            let order = slab_order(size, min_objects, SLUB_MAX_ORDER, fraction);
            if order <= SLUB_MAX_ORDER {
                return order;
            }
            fraction /= 2;
        }
        min_objects -= 1;
    }
    let order = slab_order(size, 1, SLUB_MAX_ORDER, 1);
    if order <= SLUB_MAX_ORDER {
        order
    } else {
        slab_order(size, 1, 10, 1)
    }
}

/// `calculate_alignment()` for `SLAB_HWCACHE_ALIGN`: a cache line, halved while the object
/// fits twice; then the size rounded up to it.
pub fn hwcache_aligned_size(object_size: u64) -> u64 {
    let mut align = CACHE_LINE;
    while object_size <= align / 2 {
        align /= 2;
    }
    let align = align.max(8);
    object_size.div_ceil(align) * align
}
