//! Requested sizes and alignments as the fuzzer picks them, and the layouts made of them.

use arbitrary::Arbitrary;
use arena_pool::allocator_api2::alloc::Layout;

use crate::BACKING_CAP;

/// A requested size, as the fuzzer picks it.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Size {
    /// 0 ..= 255 bytes.
    Small(u8),
    /// 0 ..= the target's largest ordinary size.
    Any(u16),
    /// One of [`HUGE`]: beyond what any allocator here can serve.
    Huge(u8),
    /// 60 KiB + `n` KiB: around and above the arenas' large-block threshold (64 KiB), up to
    /// 315 KiB, whatever the target's largest ordinary size (kept small: the model writes every
    /// byte of every block).
    Large(u8),
}

/// The smallest size [`Size::Large`] gives.
pub const LARGE_BASE: usize = 60 * 1024;

/// The most a grow may make a block (large blocks grow past the ordinary sizes).
pub const GROW_MAX: usize = 512 << 10;

/// Sizes no allocator here can serve: near `isize::MAX`, around 2^32 and 2^40, and just above
/// [`BACKING_CAP`]. Clamped to the largest valid size for the alignment in use.
pub const HUGE: [usize; 8] = [
    isize::MAX as usize,
    isize::MAX as usize - 4096,
    isize::MAX as usize / 2 + 1,
    usize::MAX / 4,
    1 << 40,
    (1 << 32) + 1,
    1 << 31,
    BACKING_CAP + 1,
];

impl Size {
    /// The size in bytes, with `Any` reduced modulo `max + 1`.
    pub fn bytes(self, max: usize) -> usize {
        match self {
            Size::Small(n) => n as usize,
            Size::Any(n) => n as usize % (max + 1),
            Size::Huge(i) => HUGE[i as usize % HUGE.len()],
            Size::Large(n) => LARGE_BASE + n as usize * 1024,
        }
    }

    /// Whether this is a size no allocator here can serve.
    pub fn is_huge(self) -> bool {
        matches!(self, Size::Huge(_))
    }
}

/// An alignment 1 ..= 4096 from a fuzzer byte.
pub fn align_from(log: u8) -> usize {
    1 << (log % 13)
}

/// A layout of `size` (clamped to the largest valid size) and `align`.
pub fn layout(size: usize, align: usize) -> Layout {
    let size = size.min(isize::MAX as usize - (align - 1));
    Layout::from_size_align(size, align).expect("a clamped size makes a valid layout")
}
