//! A page of one size class: its header, its free list and the carving of its never-used
//! blocks, and the arithmetic of its size.

use core::ptr::NonNull;

use super::classes::{CLASS_ALIGN, class_size};

/// Largest page size accepted.
pub(super) const MAX_PAGE_SIZE: usize = 1 << 20;
/// Pages are aligned to this, the address map's granule (so that no two pages share one).
pub(super) const GRANULE_SHIFT: u32 = 12;
pub(super) const GRANULE: usize = 1 << GRANULE_SHIFT;
/// Smallest `page_size` accepted.
pub(super) const MIN_PAGE_SIZE: usize = GRANULE;

/// A page's header: one cache line (64 bytes on 64-bit targets, less on 32-bit ones; pages are
/// aligned to the granule, so it is one line exactly), what allocation and freeing read and
/// write first. The counts and sizes are bounded by the largest page (1 MiB), so 32 bits hold
/// them. The fields that the rest of the module reads and writes (through `get!` and `set!`) are
/// visible to it.
#[repr(C)]
pub(super) struct PageHeader {
    free: Option<NonNull<u8>>,
    /// Next never-used block; `end` is one past the last block.
    carve: NonNull<u8>,
    end: NonNull<u8>,
    /// Links in the class's list of pages with free blocks, or in the empty-page cache.
    pub(super) next: Option<Page>,
    pub(super) prev: Option<Page>,
    /// Block size of the class.
    block: u32,
    live: u32,
    /// Blocks the page holds.
    slots: u32,
    /// Bytes of the page.
    pub(super) size: u32,
    class: u8,
    pub(super) in_list: bool,
}

const _: () = assert!(size_of::<PageHeader>() <= 64);

/// A page count or size as the header keeps it (all are below `MAX_PAGE_SIZE`).
pub(super) fn narrow(n: usize) -> u32 {
    debug_assert!(n <= MAX_PAGE_SIZE);
    n as u32
}

/// Bytes before the first block of a page of `page_size` bytes: the header and, in debug
/// builds, one live bit per 16-byte unit of the page.
pub(super) fn page_metadata(page_size: usize) -> usize {
    let bitmap = if cfg!(debug_assertions) {
        (page_size / CLASS_ALIGN).div_ceil(64) * 8
    } else {
        0
    };
    (size_of::<PageHeader>() + bitmap).next_multiple_of(CLASS_ALIGN)
}

/// A page, seen through its header pointer (a copyable handle; the pool owns the memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Page(pub(super) NonNull<PageHeader>);

/// Reads a header field by value through the raw pointer.
macro_rules! get {
    ($page:expr, $field:ident) => {{
        let page: Page = $page;
        // SAFETY: `page` is a page the pool holds, whose header was written by `init`; the field
        // is read by value, without forming a reference.
        unsafe { (*page.0.as_ptr()).$field }
    }};
}

/// Writes a header field through the raw pointer.
macro_rules! set {
    ($page:expr, $field:ident, $value:expr) => {{
        let page: Page = $page;
        let value = $value;
        // SAFETY: as in `get!`; the pool is `!Sync`, so nothing races this write.
        unsafe { (*page.0.as_ptr()).$field = value }
    }};
}

pub(super) use {get, set};

impl Page {
    pub(super) fn size(self) -> usize {
        get!(self, size) as usize
    }

    pub(super) fn slots(self) -> usize {
        get!(self, slots) as usize
    }

    pub(super) fn live(self) -> usize {
        get!(self, live) as usize
    }

    pub(super) fn block(self) -> usize {
        get!(self, block) as usize
    }

    pub(super) fn class(self) -> usize {
        usize::from(get!(self, class))
    }

    /// (Re)formats the page for `class`: no block in use, all to be carved. `size` is the
    /// page's, which holds at least one block of the class.
    pub(super) fn init(self, class: usize, size: usize) {
        let block = class_size(class);
        let first = page_metadata(size);
        let slots = (size - first) / block;
        // SAFETY: `first + slots * block <= size`, inside the page's block.
        let (carve, end) = unsafe {
            let carve = self.0.cast::<u8>().add(first);
            (carve, carve.add(slots * block))
        };
        // Classes are fewer than `MAX_CLASSES` (64).
        set!(self, class, class as u8);
        set!(self, block, narrow(block));
        set!(self, size, narrow(size));
        set!(self, slots, narrow(slots));
        set!(self, live, 0);
        set!(self, free, None);
        set!(self, carve, carve);
        set!(self, end, end);
        #[cfg(debug_assertions)]
        {
            let words = (size / CLASS_ALIGN).div_ceil(64);
            // SAFETY: the bitmap follows the header inside the metadata area.
            unsafe { self.bits().write_bytes(0, words) };
        }
    }

    /// Takes a block, or `None` when the page is full.
    pub(super) fn pop(self) -> Option<NonNull<u8>> {
        let p = match get!(self, free) {
            Some(p) => {
                // SAFETY: a block on the page's free list holds the link `push` wrote; blocks are
                // 16-aligned and at least 16 bytes long.
                set!(self, free, unsafe {
                    p.cast::<Option<NonNull<u8>>>().read()
                });
                p
            }
            None => {
                let c = get!(self, carve);
                let block = self.block();
                if get!(self, end).addr().get() - c.addr().get() < block {
                    return None;
                }
                // SAFETY: at least one block is left before `end`.
                set!(self, carve, unsafe { c.add(block) });
                c
            }
        };
        set!(self, live, get!(self, live) + 1);
        Some(p)
    }

    pub(super) fn is_full(self) -> bool {
        get!(self, free).is_none()
            && get!(self, end).addr().get() - get!(self, carve).addr().get() < self.block()
    }

    /// # Safety
    /// `p` is a block of this page in use, given back.
    pub(super) unsafe fn push(self, p: NonNull<u8>) {
        let next = get!(self, free);
        // SAFETY: the block is free now, 16-aligned and at least 16 bytes long.
        unsafe { p.cast::<Option<NonNull<u8>>>().write(next) };
        set!(self, free, Some(p));
        set!(self, live, get!(self, live) - 1);
    }

    #[cfg(debug_assertions)]
    fn bits(self) -> NonNull<u64> {
        // SAFETY: the bitmap follows the header (8-aligned, a multiple of 8 long).
        unsafe { self.0.add(1).cast::<u64>() }
    }

    /// Debug builds: sets the live bit of the block at `p`, returning the old one; panics when
    /// `p` is not the start of a block of this page.
    #[cfg(debug_assertions)]
    pub(super) fn swap_bit(self, p: NonNull<u8>, live: bool) -> bool {
        let first = self.0.addr().get() + page_metadata(self.size());
        let offset = p.addr().get().wrapping_sub(first);
        let block = self.block();
        if offset % block != 0 || p.addr().get() >= get!(self, end).addr().get() {
            panic!("arena-pool: SizeClassPool::deallocate: {p:p} was not allocated by this pool");
        }
        let unit = offset / CLASS_ALIGN;
        // SAFETY: `unit < size / 16`, and the bitmap has a bit per 16-byte unit of the page.
        unsafe { crate::pool::swap_live_bit(self.bits(), unit, live) }
    }
}

/// The bytes of a page of exactly `blocks` blocks of `block` bytes: its metadata and the
/// blocks, with no tail.
pub(super) fn page_bytes(blocks: usize, block: usize) -> usize {
    let data = blocks * block;
    // In debug builds the metadata grows with the page (a bit per 16 bytes): settle it.
    let mut meta = page_metadata(data);
    loop {
        let more = page_metadata(data + meta);
        if more <= meta {
            return data + meta;
        }
        meta = more;
    }
}
