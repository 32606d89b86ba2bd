//! The size classes: 16-byte steps up to 128 B, then four classes per power of two (see the
//! module documentation of [`SizeClassPool`](super::SizeClassPool)), by table up to [`TABLED`]
//! and by arithmetic above.

/// Every pooled block is aligned to this.
pub(super) const CLASS_ALIGN: usize = 16;
/// Classes of the 16-byte-step range (16 ..= 128).
const SMALL_CLASSES: usize = 8;
/// Upper bound on the number of classes (page sizes are capped so that this suffices).
pub(super) const MAX_CLASSES: usize = 64;

/// Sizes up to this are classed by a table lookup; larger ones (only with a `page_size` above
/// 64 KiB) by arithmetic.
const TABLED: usize = 8192;

/// The class of a pooled size (`1 ..`), by arithmetic.
const fn class_of_computed(size: usize) -> usize {
    if size <= 128 {
        (size - 1) / 16
    } else {
        // 2^p < size <= 2^(p + 1), split in four steps of 2^(p - 2).
        let p = (size - 1).ilog2() as usize;
        let step_shift = p - 2;
        let within = (size - 1 - (1 << p)) >> step_shift;
        SMALL_CLASSES + (p - 7) * 4 + within
    }
}

/// The block size of a class, by arithmetic.
const fn class_size_computed(class: usize) -> usize {
    if class < SMALL_CLASSES {
        (class + 1) * 16
    } else {
        let q = class - SMALL_CLASSES;
        let p = 7 + q / 4;
        (1 << p) + ((q % 4) + 1) * (1 << (p - 2))
    }
}

/// `class_of_computed` of every size up to [`TABLED`], by 16-byte unit: every class size is a
/// multiple of 16, so the sizes of one unit (`16k + 1 ..= 16k + 16`) share a class.
static CLASS_OF_UNIT: [u8; TABLED / CLASS_ALIGN] = {
    let mut table = [0u8; TABLED / CLASS_ALIGN];
    let mut unit = 0;
    while unit < table.len() {
        table[unit] = class_of_computed(unit * CLASS_ALIGN + 1) as u8;
        unit += 1;
    }
    table
};

/// `class_size_computed` of every class.
static CLASS_SIZE: [u32; MAX_CLASSES] = {
    let mut table = [0u32; MAX_CLASSES];
    let mut class = 0;
    while class < MAX_CLASSES {
        table[class] = class_size_computed(class) as u32;
        class += 1;
    }
    table
};

/// The class of a pooled size (`1 ..`).
#[inline]
pub(crate) fn class_of(size: usize) -> usize {
    debug_assert!(size > 0);
    match CLASS_OF_UNIT.get((size - 1) / CLASS_ALIGN) {
        Some(&class) => class as usize,
        None => class_of_computed(size),
    }
}

/// The block size of a class.
#[inline]
pub(crate) fn class_size(class: usize) -> usize {
    match CLASS_SIZE.get(class) {
        Some(&size) => size as usize,
        None => class_size_computed(class),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::size_class::page::MAX_PAGE_SIZE;

    #[test]
    fn classes_are_monotone_16_aligned_and_waste_little() {
        let mut last = 0;
        let top = if cfg!(miri) { 1 << 13 } else { 1 << 20 };
        for size in 1..=top {
            let c = class_of(size);
            let block = class_size(c);
            assert!(block >= size, "size {size} in class {c} of {block}");
            assert_eq!(block % 16, 0);
            assert!(c >= last);
            last = c;
            assert_eq!(class_of(block), c, "a class's own size maps back to it");
            if size <= 128 {
                assert!(block - size < 16, "size {size} wastes too much in {block}");
            } else {
                assert!(
                    (block - size) * 4 <= block,
                    "size {size} wastes too much in {block}"
                );
            }
        }
        assert!(class_of(MAX_PAGE_SIZE / 8) < MAX_CLASSES);
    }

    #[test]
    fn the_tables_agree_with_the_arithmetic() {
        for size in 1..=TABLED + 4 * CLASS_ALIGN {
            assert_eq!(class_of(size), class_of_computed(size), "size {size}");
        }
        for class in 0..MAX_CLASSES + 2 {
            assert_eq!(
                class_size(class),
                class_size_computed(class),
                "class {class}"
            );
        }
    }
}
