//! One size class's state: its counts, its list of pages with room, the page it left to
//! empty, its spare page and its list of recently freed blocks.

use core::cell::Cell;
use core::ptr::NonNull;

use super::classes::class_size;
use super::page::{Page, page_bytes};
use super::{DRAIN_SHARE, FIRST_PAGE_BYTES, RECENT_BYTES, RECENT_MAX};

/// One class's state: what allocation and freeing use first, in the first cache line (the
/// struct is aligned to one), the page upkeep after.
#[repr(C, align(64))]
pub(super) struct ClassState {
    // First cache line: what allocation and freeing read.
    /// Blocks freed last, kept out of their pages (still counted live there) and handed out
    /// first: a block freed and soon asked for again costs no page update (see `give_back`).
    pub(super) recent: Cell<Option<NonNull<u8>>>,
    pub(super) recent_count: Cell<usize>,
    /// The most blocks `recent` keeps.
    pub(super) recent_limit: usize,
    /// Blocks out of their pages: in use, or on the recent list. The class's blocks in use are
    /// `out - recent_count` (see `live`), so that the recent list's two paths update one count.
    pub(super) out: Cell<usize>,
    /// From this many blocks in use, a freed block goes to `recent` with no other check: three
    /// quarters of `capacity` when the class has two pages or more (below, it may leave a page
    /// to empty), half of it with one page (below half, blocks go back to their pages).
    pub(super) recent_floor: Cell<usize>,
    /// Pages of this class with a free block; allocation takes from the first.
    pub(super) available: Cell<Option<Page>>,
    /// Blocks the class's pages hold.
    pub(super) capacity: Cell<usize>,
    /// A page left to empty: out of the list allocation takes from, and freed blocks of it go
    /// straight back to it while the class is below `recent_floor`.
    pub(super) draining: Cell<Option<Page>>,
    // Second: page upkeep.
    /// The last page of `available`.
    pub(super) available_tail: Cell<Option<Page>>,
    pub(super) pages: Cell<usize>,
    /// Bytes of the class's pages.
    pub(super) bytes: Cell<usize>,
    /// Blocks of the class's first page.
    pub(super) first_blocks: usize,
    /// Bytes of a page of one block of the class (the least a cached page needs).
    pub(super) one_block_page: usize,
    /// The page the class emptied last, kept for it (counted in the cache of empty pages).
    pub(super) spare: Cell<Option<Page>>,
}

impl ClassState {
    pub(super) fn new(class: usize) -> ClassState {
        ClassState {
            available: Cell::new(None),
            available_tail: Cell::new(None),
            out: Cell::new(0),
            pages: Cell::new(0),
            bytes: Cell::new(0),
            capacity: Cell::new(0),
            recent_floor: Cell::new(0),
            recent: Cell::new(None),
            recent_count: Cell::new(0),
            recent_limit: (RECENT_BYTES / class_size(class)).clamp(1, RECENT_MAX),
            first_blocks: (FIRST_PAGE_BYTES / class_size(class)).max(1),
            one_block_page: page_bytes(1, class_size(class)),
            spare: Cell::new(None),
            draining: Cell::new(None),
        }
    }

    /// Adds a page of `bytes` bytes and `slots` blocks to the class's counts (`add`), or takes
    /// one out.
    pub(super) fn count_page(&self, bytes: usize, slots: usize, add: bool) {
        let (pages, capacity) = if add {
            self.bytes.set(self.bytes.get() + bytes);
            (self.pages.get() + 1, self.capacity.get() + slots)
        } else {
            self.bytes.set(self.bytes.get() - bytes);
            (self.pages.get() - 1, self.capacity.get() - slots)
        };
        self.pages.set(pages);
        self.capacity.set(capacity);
        self.arm_floor();
    }

    /// Sets `recent_floor` from the class's counts: with two pages or more, a page can be left
    /// to empty below three quarters in use.
    pub(super) fn arm_floor(&self) {
        let capacity = self.capacity.get();
        self.recent_floor.set(if self.pages.get() >= 2 {
            capacity - capacity / DRAIN_SHARE
        } else {
            capacity.div_ceil(2)
        });
    }

    /// The class's blocks in use.
    #[inline]
    pub(super) fn live(&self) -> usize {
        self.out.get() - self.recent_count.get()
    }

    /// Takes the newest block off the recent list.
    #[inline]
    pub(super) fn take_recent(&self) -> Option<NonNull<u8>> {
        let p = self.recent.get()?;
        // SAFETY: a block on the recent list holds the link `keep_recent` wrote.
        self.recent
            .set(unsafe { p.cast::<Option<NonNull<u8>>>().read() });
        self.recent_count.set(self.recent_count.get() - 1);
        Some(p)
    }

    /// Puts a free block on the recent list.
    ///
    /// # Safety
    /// `p` is a free block of this class, on no list, with its page's provenance.
    #[inline]
    pub(super) unsafe fn keep_recent(&self, p: NonNull<u8>) {
        // SAFETY: the block is free, 16-aligned and at least 16 bytes long (caller).
        unsafe { p.cast::<Option<NonNull<u8>>>().write(self.recent.get()) };
        self.recent.set(Some(p));
        self.recent_count.set(self.recent_count.get() + 1);
    }
}
