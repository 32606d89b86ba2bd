//! The model's live blocks: each holds its own byte pattern, checked for alignment, overlap and
//! contents.

use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::Layout;

/// A live block and the bytes it must hold.
#[derive(Debug)]
pub(crate) struct Block {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) layout: Layout,
    pub(crate) id: u64,
    pub(crate) content: Vec<u8>,
}

/// Length of the pattern table: a prime, so that blocks starting at different phases differ.
const PATTERN_LEN: usize = 4099;

/// A fixed pseudo-random byte sequence; block `id` holds it cyclically from phase
/// `id * 1237 % PATTERN_LEN` on. (Copying from a table keeps Miri fast, where a per-byte
/// computation would dominate the run.)
fn pattern_table() -> &'static [u8] {
    static TABLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut x: u32 = 0x2545_F491;
        (0..PATTERN_LEN)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    })
}

/// Appends the pattern bytes `from..to` of the block `id` to `out`.
fn pattern(id: u64, from: usize, to: usize, out: &mut Vec<u8>) {
    let table = pattern_table();
    let phase = (id as usize).wrapping_mul(1237) % PATTERN_LEN;
    let mut i = from;
    while i < to {
        let at = (phase + i) % PATTERN_LEN;
        let n = (PATTERN_LEN - at).min(to - i);
        out.extend_from_slice(&table[at..at + n]);
        i += n;
    }
}

/// Writes the pattern of `block` to its bytes `from..to` (and to the model).
pub(crate) fn fill(block: &mut Block, from: usize, to: usize) {
    block.content.truncate(from);
    pattern(block.id, from, to, &mut block.content);
    let src = &block.content[from..to];
    // SAFETY: the block is live, was allocated for at least `to` bytes, and no reference into it
    // is alive; `src` is a `Vec` outside the arena.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), block.ptr.as_ptr().add(from), to - from) };
}

/// The bytes `from..to` of a live block whose bytes up to `to` are all initialised.
pub(crate) fn bytes_of(ptr: NonNull<u8>, from: usize, to: usize) -> Vec<u8> {
    // SAFETY: the callers pass a live block of at least `to` bytes, the first `to` of which were
    // written (pattern, zeroes or a copy of written bytes); the slice is dropped before the
    // arena is used again.
    unsafe { std::slice::from_raw_parts(ptr.as_ptr().add(from), to - from) }.to_vec()
}

/// Checks alignment, overlap and contents of every live block.
pub(crate) fn check_blocks<'b>(
    blocks: impl IntoIterator<Item = &'b Block>,
    what: &dyn Fn() -> String,
) {
    let mut ranges = Vec::new();
    for b in blocks {
        let a = b.ptr.as_ptr().addr();
        assert_eq!(
            a % b.layout.align(),
            0,
            "block {} ({:?}) misaligned at {a:#x} after {}",
            b.id,
            b.layout,
            what()
        );
        assert_eq!(b.content.len(), b.layout.size());
        // SAFETY: a live block whose `layout.size()` bytes were all written (see `fill`).
        let actual = unsafe { std::slice::from_raw_parts(b.ptr.as_ptr(), b.layout.size()) };
        if actual != &b.content[..] {
            let at = actual
                .iter()
                .zip(&b.content)
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            panic!(
                "block {} ({:?} at {a:#x}) corrupted at offset {at} after {}",
                b.id,
                b.layout,
                what()
            );
        }
        if b.layout.size() > 0 {
            ranges.push((a, a + b.layout.size(), b.id));
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "blocks {} [{:#x}, {:#x}) and {} [{:#x}, {:#x}) overlap after {}",
            w[0].2,
            w[0].0,
            w[0].1,
            w[1].2,
            w[1].0,
            w[1].1,
            what()
        );
    }
}

pub(crate) fn layout(size: usize, align_log: u32) -> Layout {
    Layout::from_size_align(size, 1 << align_log).unwrap()
}
