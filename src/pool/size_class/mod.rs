//! [`SizeClassPool`]: mixed sizes with real reuse, in pages that grow with each class.
//!
//! Classes: 16-byte steps up to 128 B, then four classes per power of two (160, 192, 224, 256,
//! 320, …), so a block wastes at most 25% of its class (hashbrown's tables sit just above powers
//! of two; `Vec`'s doubling sizes are classes exactly). Every class is a multiple of 16, so every
//! block is 16-aligned. Larger or more-aligned layouts go to the backing allocator.
//!
//! A page is a one-cache-line header (class, size, live count, per-page free list, carve
//! position, list links) followed by a whole number of blocks of its class, aligned to 4 KiB.
//! Pages follow their class's population: a class's first page holds about 1 KiB of blocks (at
//! least one); a class takes another page only when all of its pages are full, of an eighth of
//! the bytes its pages hold, at least 4 KiB, in whole 4 KiB granules (and at least a first
//! page's blocks, at most `page_size`). So a class holds at most 1.125x the bytes of the most
//! blocks it ever had in use or recently freed (below) at once, plus a first page, a 4 KiB page
//! and the pages' headers. A page with free blocks that was full goes last in its class's list,
//! so that allocation keeps to the pages in front and pages at the back can empty.
//!
//! **Memory moves between classes.** Under random churn a class's population wanders, and a
//! class that keeps every page it once needed ends up holding the sum of every class's peak.
//! So a class of two pages or more with more than a quarter of its blocks free (in its pages or
//! on its recent list, below) leaves one page to empty: the emptiest of its first 16 pages with
//! room leaves the list that allocation takes from, and the blocks freed in it go straight back
//! to it while the class stays below three quarters in use. Once empty it goes to the cache of
//! empty pages, where any class whose block fits can take it; a class that runs out of room
//! before then takes that page back first. A class whose population falls and then churns at
//! that level so comes down to about 4/3 of the blocks it uses.
//!
//! A page that empties goes to a cache of empty pages, and beyond the cache's cap
//! (`max_empty_pages` largest pages' worth of bytes) back to the backing allocator. **The cache
//! keeps what recent use takes out of it**, as an arena's reset keeps what recent cycles needed:
//! time is counted in pages emptied (a class's only small page, kept in place, counts too), in
//! windows of twice as many empties as the pool holds pages, and at the end of each window the
//! cache gives back as many bytes as it never went below during the window: pages that no class
//! took out of it for a whole window go back without a [`SizeClassPool::trim`] call. A loop
//! whose cycles fill and empty the pool empties no page more than once a cycle, so a window
//! spans a whole cycle: a repeated cycle keeps every page it takes back and takes no new memory,
//! and when the cycles shrink, the pages only the larger ones used go back within two windows.
//! So the memory held follows the live set down as well as up: the pages in use, the classes'
//! small pages kept in place, and cached pages that some class took out of the cache in the
//! last window, at most `max_empty_pages` largest pages. A pool that stops freeing keeps its
//! cache as it is (the windows count empties, not time), as an arena keeps its chunk after its
//! last reset; `trim` gives it back. Each class keeps the page it emptied
//! last as its spare (unless it left that page to empty on purpose); the others go to a shared
//! list. A class that needs a page takes its spare, else a cached page last formatted for it,
//! else any cached page that holds one of its blocks, else **another class's spare**, and only
//! then asks the backing allocator: no new memory is taken while an empty page that fits is
//! held, so the cache never raises the peak.
//!
//! While a class's pages are at least half in use, it keeps its last-freed blocks (up to 16 KiB,
//! at most 32 blocks) on a list of its own and hands them out first, newest first: a block freed
//! and soon asked for again costs neither page's header a visit, which keeps a churning working
//! set spread over many small pages as fast as one over a few large ones. Those blocks count as
//! in use in their pages until they are handed out again, or put back when the class's last
//! block is freed or by [`SizeClassPool::trim`]. A class whose population falls below half its
//! pages frees straight into the pages, so that they can empty. Before the pool takes new memory
//! (a class needs a page, and no empty page that fits is held), every class's recent blocks go
//! back to their pages, and a page that empties so is used instead: the recent lists hold only
//! blocks that no page, emptied, could give to a class that needs room, so they never raise the
//! peak by a whole page.
//!
//! `deallocate` finds a block's page through an address map keyed by `address / 4 KiB` (a page
//! registers each 4 KiB granule it touches; pages are aligned to 4 KiB, so no two share one),
//! which returns the pool's own page pointer: the caller's pointer may carry a provenance
//! narrowed to its block, so it is used for its address only.

use core::alloc::Layout;
use core::cell::Cell;
use core::fmt;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global};

use super::address_map::AddressMap;
use super::limit::Limited;
use crate::arena::dangling;
use crate::reentry::BackingCall;

mod class_state;
mod classes;
mod page;
mod upkeep;

use class_state::ClassState;
use classes::{CLASS_ALIGN, MAX_CLASSES};
pub(crate) use classes::{class_of, class_size};
use page::{GRANULE_SHIFT, MAX_PAGE_SIZE, MIN_PAGE_SIZE, Page, get};

/// A class's first page holds about this many bytes of blocks (and at least one block).
const FIRST_PAGE_BYTES: usize = 1024;
/// A class's later pages: an eighth of the bytes its pages hold, at least this many.
const LATER_MIN: usize = 4096;
/// A class keeps up to this many bytes of its last-freed blocks out of their pages, at most
/// [`RECENT_MAX`] blocks.
const RECENT_BYTES: usize = 16384;
const RECENT_MAX: usize = 32;
/// A class with more than a quarter of its blocks free (`1 / DRAIN_SHARE`) leaves a page to
/// empty: the emptiest of the first [`DRAIN_SCAN`] pages with room.
const DRAIN_SHARE: usize = 4;
const DRAIN_SCAN: usize = 16;
/// A class's only page stays formatted in place when it empties if it is at most this large.
const KEEP_IN_PLACE: usize = 4096;
/// The cache of empty pages gives back, at the end of each window of page empties, the pages
/// no class took out of it during the window; a window is twice as many empties as the pool
/// held pages when it began, at least this many.
const WINDOW_MIN: usize = 16;

/// Settings of a [`SizeClassPool`].
///
/// ```
/// use arena_pool::{SizeClassOptions, SizeClassPool};
/// let pool = SizeClassPool::with_options(SizeClassOptions {
///     largest_pooled: 4096,
///     page_size: 32 * 1024,
///     max_empty_pages: 2,
/// });
/// assert_eq!(pool.options().largest_pooled, 4096);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeClassOptions {
    /// Largest size served from a class (rounded up to a class size, and to at most an eighth of
    /// a page); larger requests go to the backing allocator. Default 8 KiB.
    pub largest_pooled: usize,
    /// Bytes of the largest page, a power of two between 4 KiB and 1 MiB (rounded into that
    /// range). A class's pages start small (about 1 KiB of blocks) and grow with the class's
    /// population up to this. Default 64 KiB.
    pub page_size: usize,
    /// The cap on the empty pages kept for reuse, counted in largest pages: the cache holds at
    /// most `max_empty_pages * page_size` bytes of empty pages (of any size), and pages emptied
    /// beyond that go back to the backing allocator. Within the cap, pages that no class takes
    /// out of the cache for a while go back too (see the pool's documentation). Default 4.
    pub max_empty_pages: usize,
}

impl Default for SizeClassOptions {
    fn default() -> SizeClassOptions {
        SizeClassOptions {
            largest_pooled: 8 * 1024,
            page_size: 64 * 1024,
            max_empty_pages: 4,
        }
    }
}

impl SizeClassOptions {
    /// The options as the pool applies them: page size a power of two in range, largest pooled
    /// size a class size fitting at least eight blocks in a largest page.
    fn normalized(self) -> SizeClassOptions {
        let page_size = self
            .page_size
            .clamp(MIN_PAGE_SIZE, MAX_PAGE_SIZE)
            .next_power_of_two();
        let cap = page_size / 8;
        let wanted = self.largest_pooled.clamp(CLASS_ALIGN, cap);
        let mut largest = class_size(class_of(wanted));
        if largest > cap {
            largest = class_size(class_of(wanted) - 1);
        }
        SizeClassOptions {
            largest_pooled: largest,
            page_size,
            max_empty_pages: self.max_empty_pages,
        }
    }
}

/// A pool for mixed layouts with real reuse: each size class keeps its own free lists in pages,
/// so a block freed by one `Vec` or `HashMap` is handed out again to a later request of its class
/// before the class takes another page, and pages that empty go back to the backing allocator
/// (beyond a small cache). Within a page, the block freed last is the next one out. Use it for
/// long-running, high-churn programs, where an arena's memory would only grow.
///
/// Pooled blocks (up to [`SizeClassOptions::largest_pooled`], alignment at most 16) report
/// their class size as their length (hashbrown uses the extra room); larger or more-aligned
/// layouts go to `A`. Debug builds detect a double free and a pointer that is not the pool's.
///
/// `SizeClassPool` is `Send` when `A` is, never `Sync`, and not `Clone` (a clone would have to
/// free the original's blocks): share it as `&SizeClassPool`.
///
/// ```
/// use arena_pool::SizeClassPool;
/// use arena_pool::allocator_api2::vec::Vec;
///
/// let pool = SizeClassPool::new();
/// let mut map = hashbrown::HashMap::new_in(&pool);
/// for round in 0..3u64 {
///     for i in 0..200 {
///         map.insert(i, round);
///     }
///     map.clear();
///     map.shrink_to_fit(); // the table goes back to its class, ready for the next round
/// }
/// let v: Vec<u8, _> = Vec::with_capacity_in(100, &pool);
/// assert!(v.capacity() >= 100);
/// ```
pub struct SizeClassPool<A: Allocator = Global> {
    options: SizeClassOptions,
    classes: [ClassState; MAX_CLASSES],
    /// From a block's address to its page (with the page's provenance).
    map: AddressMap,
    pages: Cell<usize>,
    /// Bytes of every page held.
    bytes_held: Cell<usize>,
    /// Empty pages kept for reuse (linked through `next`).
    empty: Cell<Option<Page>>,
    empty_count: Cell<usize>,
    /// Bytes of the cached empty pages.
    empty_bytes: Cell<usize>,
    /// The fewest bytes the cache held during the current window of page empties: that many
    /// stayed in it through the window, unused (see `next_window`).
    cache_low: Cell<usize>,
    /// Page empties left before the current window ends.
    window_left: Cell<usize>,
    fallback_blocks: Cell<usize>,
    /// Set while a page is taken from `alloc` (see [`BackingCall`]).
    backing_call: BackingCall,
    /// The backing allocator, with the pool's allocation limit: every call into it goes
    /// through this.
    alloc: Limited<A>,
}

// SAFETY: the pool exclusively owns its pages and points only into them; handed-out blocks
// borrow it, so none is alive when it moves. The pages are freed through `A` on the thread that
// ends up owning the pool, hence `A: Send`. (It is never `Sync`: see `crate::sharing`.)
unsafe impl<A: Allocator + Send> Send for SizeClassPool<A> {}

impl SizeClassPool {
    /// A pool on the global allocator with the default options. Allocates nothing yet.
    pub fn new() -> SizeClassPool {
        SizeClassPool::new_in(Global)
    }

    /// A pool on the global allocator with `options`.
    pub fn with_options(options: SizeClassOptions) -> SizeClassPool {
        SizeClassPool::with_options_in(options, Global)
    }
}

impl Default for SizeClassPool {
    fn default() -> SizeClassPool {
        SizeClassPool::new()
    }
}

impl<A: Allocator> SizeClassPool<A> {
    /// A pool taking its pages (and large blocks) from `alloc`, with the default options.
    ///
    /// # The backing allocator
    /// - **`alloc` may panic**: the pool is then as it was before the request, but for recently
    ///   freed blocks put back in their pages (a new page is taken only after the address map has
    ///   made room for it, so none is lost), and usable.
    /// - **`alloc`'s `deallocate` may panic** (when a page or a large block goes back, in
    ///   `deallocate`, an allocation that puts the classes' recently freed blocks back in their
    ///   pages before it takes memory, [`trim`](Self::trim) or the pool's drop): the pool then no
    ///   longer refers to the block it was giving back, and keeps, usable, the pages it had not
    ///   given back yet (a drop leaves them, and the address map's table, to `alloc`). Such a
    ///   `deallocate` must leave its block allocated (it is leaked), as for
    ///   [`Pool::new_in`](crate::Pool::new_in).
    /// - **`alloc` may use this pool**: a nested request that needs a page (for any class) while
    ///   the pool is taking one is refused (`Err(AllocError)`); every other nested call (a free,
    ///   an allocation from a page with room, a large layout, the statistics) is served.
    pub fn new_in(alloc: A) -> SizeClassPool<A> {
        SizeClassPool::with_options_in(SizeClassOptions::default(), alloc)
    }

    /// A pool taking its pages (and large blocks) from `alloc`, with `options`.
    pub fn with_options_in(options: SizeClassOptions, alloc: A) -> SizeClassPool<A> {
        let options = options.normalized();
        SizeClassPool {
            options,
            map: AddressMap::new(GRANULE_SHIFT),
            classes: core::array::from_fn(ClassState::new),
            pages: Cell::new(0),
            bytes_held: Cell::new(0),
            empty: Cell::new(None),
            empty_count: Cell::new(0),
            empty_bytes: Cell::new(0),
            cache_low: Cell::new(0),
            window_left: Cell::new(WINDOW_MIN),
            fallback_blocks: Cell::new(0),
            backing_call: BackingCall::new(),
            alloc: Limited::new(alloc),
        }
    }

    /// The options in force (normalized: see [`SizeClassOptions`]).
    pub fn options(&self) -> SizeClassOptions {
        self.options
    }

    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        self.alloc.inner()
    }

    /// Sets a cap on the bytes the pool holds from its backing allocator, or removes it with
    /// `None`: its pages (the cached empty ones too), its address map's table, and the blocks of
    /// layouts that no class serves, which go to the backing allocator. A request that would
    /// need more fails with `AllocError` (or panics naming the limit, with
    /// [`set_panic_on_limit`](Self::set_panic_on_limit)). What the pool holds already stays,
    /// even past a new, lower limit, and a free block of a class is still handed out at the
    /// limit: the limit caps the memory taken, not the blocks in use. An empty page the pool
    /// caches is used before new memory is asked for. The limit is checked only when the pool
    /// takes memory (a new page, a large block), never on the free-list paths.
    ///
    /// As for an [arena's limit](crate::Arena::set_allocation_limit), a collection's
    /// infallible methods abort at the limit (`handle_alloc_error`) unless they reserve with
    /// their fallible calls or the pool panics on its limit.
    ///
    /// ```
    /// use arena_pool::SizeClassPool;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let pool = SizeClassPool::new();
    /// pool.set_allocation_limit(Some(16 * 1024));
    /// assert_eq!(pool.allocation_limit(), Some(16 * 1024));
    /// let mut v: Vec<u64, _> = Vec::new_in(&pool);
    /// assert!(v.try_reserve(1024).is_ok()); // 8 KiB: a block of the largest class
    /// assert!(v.try_reserve(4096).is_err()); // 32 KiB from the backing allocator: refused
    /// assert!(pool.stats().bytes_held <= 16 * 1024);
    /// ```
    pub fn set_allocation_limit(&self, limit: Option<usize>) {
        self.alloc.set_limit(limit);
    }

    /// The allocation limit, if one is set (see
    /// [`set_allocation_limit`](Self::set_allocation_limit)).
    ///
    /// ```
    /// let pool = arena_pool::SizeClassPool::new();
    /// assert_eq!(pool.allocation_limit(), None);
    /// ```
    pub fn allocation_limit(&self) -> Option<usize> {
        self.alloc.limit()
    }

    /// With `true`, the pool's `Allocator` methods (what collections call) **panic** when the
    /// [allocation limit](Self::set_allocation_limit) is reached ("arena-pool: the pool's
    /// allocation limit of N bytes is reached") instead of returning `Err(AllocError)`, as
    /// [`Arena::set_panic_on_limit`](crate::Arena::set_panic_on_limit) does for an arena: a
    /// collection's `push` or `insert` past the limit then unwinds instead of aborting. The
    /// panic is raised once the failed request has undone what it did, so the pool and its
    /// collections stay usable. Only the limit panics: a backing allocator out of memory is
    /// still `Err`.
    ///
    /// ```
    /// use std::panic::{AssertUnwindSafe, catch_unwind};
    /// use arena_pool::SizeClassPool;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let pool = SizeClassPool::new();
    /// pool.set_allocation_limit(Some(16 * 1024));
    /// pool.set_panic_on_limit(true);
    /// let mut v: Vec<u64, _> = Vec::new_in(&pool);
    /// let r = catch_unwind(AssertUnwindSafe(|| {
    ///     for i in 0..100_000 {
    ///         v.push(i); // a push past the limit panics
    ///     }
    /// }));
    /// assert!(r.is_err()); // a panic naming the limit, not an abort
    /// assert_eq!(v[10], 10); // the vector keeps what it had
    /// ```
    pub fn set_panic_on_limit(&self, panic: bool) {
        self.alloc.set_panic_on_limit(panic);
    }

    /// Whether the `Allocator` methods panic at the allocation limit.
    ///
    /// ```
    /// let pool = arena_pool::SizeClassPool::new();
    /// assert!(!pool.panics_on_limit());
    /// ```
    pub fn panics_on_limit(&self) -> bool {
        self.alloc.panics_on_limit()
    }

    /// The error of a failed `Allocator` call (see
    /// [`set_panic_on_limit`](Self::set_panic_on_limit)).
    #[inline]
    #[track_caller]
    pub(crate) fn refused(&self) -> AllocError {
        self.alloc.refuse()
    }

    /// Puts every class's recently freed blocks back in their pages, then returns every empty
    /// page to the backing allocator: the cached ones, and the one small page that a class
    /// whose blocks are all free keeps formatted for its next block.
    ///
    /// ```
    /// use arena_pool::allocator_api2::vec::Vec;
    /// let mut pool = arena_pool::SizeClassPool::new();
    /// {
    ///     let mut blocks = Vec::new_in(&pool);
    ///     for _ in 0..100 {
    ///         blocks.push(Vec::<u8, _>::with_capacity_in(1000, &pool));
    ///     }
    ///     assert!(pool.stats().pages > 0);
    /// } // every block freed: their pages are empty, cached or kept for their class
    /// pool.trim();
    /// assert_eq!(pool.stats().pages, 0);
    /// ```
    pub fn trim(&mut self) {
        // Each page leaves every list and count before it is released (see `release`), so a
        // backing allocator whose `deallocate` unwinds leaves the pool consistent, holding the
        // pages not released yet.
        for state in &self.classes {
            self.flush_recent(state);
            if let Some(page) = state.spare.take() {
                self.uncache(page);
                // SAFETY: a spare page is empty, and now out of the cache and of every list.
                unsafe { self.release(page) };
            }
            // A class with no block in use may keep its one small page formatted in place.
            if state.live() == 0 {
                if let Some(page) = state.available.get() {
                    self.detach(page, state);
                    // SAFETY: the class has no block in use (and its recent blocks went back
                    // above), so its page is empty, and it is now unlinked from the class list.
                    unsafe { self.release(page) };
                }
            }
        }
        while let Some(page) = self.empty.get() {
            self.empty.set(get!(page, next));
            self.uncache(page);
            // SAFETY: a cached page is empty, and now out of the cache and of every list.
            unsafe { self.release(page) };
        }
    }

    /// Statistics, with a line per class in use.
    ///
    /// ```
    /// use arena_pool::allocator_api2::boxed::Box;
    /// let pool = arena_pool::SizeClassPool::new();
    /// let a = Box::new_in([0u8; 100], &pool);
    /// let s = pool.stats();
    /// assert_eq!(s.pages, 1);
    /// let class = s.classes().find(|c| c.live > 0).unwrap();
    /// assert_eq!((class.block_size, class.live), (112, 1));
    /// drop(a);
    /// ```
    pub fn stats(&self) -> SizeClassStats {
        let mut classes = [ClassStats::default(); MAX_CLASSES];
        for (i, (c, out)) in self.classes.iter().zip(classes.iter_mut()).enumerate() {
            *out = ClassStats {
                block_size: class_size(i),
                live: c.live(),
                pages: c.pages.get(),
                bytes: c.bytes.get(),
            };
        }
        SizeClassStats {
            pages: self.pages.get(),
            empty_pages: self.empty_count.get(),
            empty_bytes: self.empty_bytes.get(),
            bytes_held: self.bytes_held.get(),
            fallback_blocks: self.fallback_blocks.get(),
            class_count: class_of(self.options.largest_pooled) + 1,
            per_class: classes,
        }
    }

    /// The class of `layout`, or `None` when it goes to the backing allocator (or is empty).
    #[inline(always)]
    fn class(&self, layout: Layout) -> Option<usize> {
        (layout.size() != 0
            && layout.size() <= self.options.largest_pooled
            && layout.align() <= CLASS_ALIGN)
            .then(|| class_of(layout.size()))
    }

    // ----- the Allocator rules -----

    /// `Allocator::allocate`. Always inlined: a grow that moves a block (`relocate`) allocates
    /// through it, and its class test and free-list pop are the whole of the common case.
    #[inline(always)]
    pub(crate) fn allocate_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        match self.class(layout) {
            Some(class) => Ok(NonNull::slice_from_raw_parts(
                self.take(class)?,
                class_size(class),
            )),
            None if layout.size() == 0 => {
                Ok(NonNull::slice_from_raw_parts(dangling(layout.align()), 0))
            }
            None => {
                let block = self.alloc.allocate(layout)?;
                self.fallback_blocks.set(self.fallback_blocks.get() + 1);
                Ok(block)
            }
        }
    }

    pub(crate) fn allocate_zeroed_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if self.class(layout).is_none() && layout.size() != 0 {
            let block = self.alloc.allocate_zeroed(layout)?;
            self.fallback_blocks.set(self.fallback_blocks.get() + 1);
            return Ok(block);
        }
        let block = self.allocate_impl(layout)?;
        // SAFETY: a fresh block of `block.len()` writable bytes.
        unsafe { block.cast::<u8>().write_bytes(0, block.len()) };
        Ok(block)
    }

    /// The pool's own pointer to the block at `p`'s address, with its page's provenance; `None`
    /// when no page of the pool holds that address. Out of line: the in-place `grow`/`shrink`
    /// path stays small.
    #[cold]
    #[inline(never)]
    fn rederive(&self, p: NonNull<u8>) -> Option<NonNull<u8>> {
        let base = self.map.get(p.addr().get())?;
        Some(base.with_addr(p.addr()))
    }

    /// # Safety
    /// The `Allocator::deallocate` contract.
    #[inline]
    pub(crate) unsafe fn deallocate_impl(&self, p: NonNull<u8>, layout: Layout) {
        match self.class(layout) {
            // SAFETY: routing is by layout, so a pooled layout means a pooled block.
            Some(class) => unsafe { self.give_back(p, class) },
            None if layout.size() == 0 => {}
            None => {
                self.fallback_blocks.set(self.fallback_blocks.get() - 1);
                // SAFETY: a non-pooled, non-empty layout means `p` came from `self.alloc`.
                unsafe { self.alloc.deallocate(p, layout) }
            }
        }
    }

    /// `grow`, `grow_zeroed` and `shrink`: in place within a class, delegated to `A` when both
    /// sides are there, moved otherwise.
    ///
    /// # Safety
    /// The `Allocator::grow`/`shrink` contract for `old` and `new`.
    #[inline]
    pub(crate) unsafe fn reallocate_impl(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let (from, to) = (self.class(old), self.class(new));
        if let (Some(a), Some(b)) = (from, to) {
            if a == b {
                // SAFETY: forwarded from the caller; both layouts are in class `a`, so `p` is a
                // live block of `class_size(a)` bytes, and `rederive` gives its page's own pointer.
                return unsafe {
                    super::resize_in_place(p, old, new, zeroed, class_size(a), |p| self.rederive(p))
                };
            }
        }
        // SAFETY: forwarded from the caller; both layouts route to `self.alloc` exactly when
        // the flag says so.
        unsafe {
            super::relocate(
                self,
                &self.alloc,
                from.is_none() && to.is_none(),
                p,
                old,
                new,
                zeroed,
            )
        }
    }
}

impl<A: Allocator> Drop for SizeClassPool<A> {
    fn drop(&mut self) {
        // Every page held is registered in the map, once from its first granule. The map is
        // read (never a page) after a page is freed, and nothing reads the pool afterwards: a
        // `deallocate` that unwinds leaves the pages not freed yet, and the map's table, to the
        // backing allocator.
        self.map.for_each_base(|base| {
            // SAFETY: ownership proves no block is in use; the pool is not used again.
            unsafe { self.free_page(Page(base.cast())) }
        });
        // SAFETY: the map's table came from `self.alloc`.
        unsafe { self.map.release(&self.alloc) };
    }
}

impl<A: Allocator> fmt::Debug for SizeClassPool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SizeClassPool")
            .field("options", &self.options)
            .field("stats", &self.stats())
            .finish()
    }
}

/// One class's line in [`SizeClassStats`].
///
/// ```
/// use arena_pool::SizeClassPool;
/// use arena_pool::allocator_api2::boxed::Box;
///
/// let pool = SizeClassPool::new();
/// let a = Box::new_in([0u8; 24], &pool);
/// let class = pool.stats().classes().find(|c| c.live > 0).unwrap();
/// assert!(class.block_size >= 24 && class.pages == 1);
/// drop(a);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassStats {
    /// Bytes per block of the class.
    pub block_size: usize,
    /// Blocks in use.
    pub live: usize,
    /// Pages formatted for the class (not counting cached empty pages). A class whose blocks
    /// are all free keeps its page here when it had only one, of at most 4 KiB, ready for its
    /// next block ([`SizeClassPool::trim`] returns it).
    pub pages: usize,
    /// Bytes of those pages.
    pub bytes: usize,
}

/// A snapshot of a [`SizeClassPool`]'s memory, from [`SizeClassPool::stats`]. Its `Debug` lists
/// the classes in use only (blocks live, or pages formatted).
///
/// ```
/// use arena_pool::SizeClassPool;
/// use arena_pool::allocator_api2::vec::Vec;
///
/// let pool = SizeClassPool::new();
/// let mut v = Vec::new_in(&pool);
/// v.extend(0..10u32);
/// let stats = pool.stats();
/// assert_eq!(stats.live_blocks(), 1);
/// assert!(stats.bytes_held >= 40);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SizeClassStats {
    /// Pages held (in use or cached empty).
    pub pages: usize,
    /// Empty pages cached for reuse.
    pub empty_pages: usize,
    /// Bytes of those pages (at most [`SizeClassOptions::max_empty_pages`] largest pages).
    pub empty_bytes: usize,
    /// Bytes of all pages held (pages differ in size: see [`SizeClassOptions::page_size`]).
    pub bytes_held: usize,
    /// Blocks currently allocated from the backing allocator (too large or too aligned).
    pub fallback_blocks: usize,
    class_count: usize,
    per_class: [ClassStats; MAX_CLASSES],
}

impl SizeClassStats {
    /// Every class, smallest first.
    pub fn classes(&self) -> impl Iterator<Item = ClassStats> + '_ {
        self.per_class[..self.class_count].iter().copied()
    }

    /// Blocks in use across all classes.
    pub fn live_blocks(&self) -> usize {
        self.classes().map(|c| c.live).sum()
    }
}

impl fmt::Debug for SizeClassStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// The classes with blocks live or pages formatted.
        struct InUse<'a>(&'a SizeClassStats);
        impl fmt::Debug for InUse<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list()
                    .entries(self.0.classes().filter(|c| c.live != 0 || c.pages != 0))
                    .finish()
            }
        }
        f.debug_struct("SizeClassStats")
            .field("pages", &self.pages)
            .field("empty_pages", &self.empty_pages)
            .field("empty_bytes", &self.empty_bytes)
            .field("bytes_held", &self.bytes_held)
            .field("fallback_blocks", &self.fallback_blocks)
            .field("classes_in_use", &InUse(self))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_lists_the_classes_in_use_only() {
        let pool = SizeClassPool::new();
        let fresh = alloc::format!("{pool:?}");
        assert!(fresh.contains("classes_in_use: []"), "{fresh}");
        let b = pool.allocate(Layout::new::<[u8; 24]>()).unwrap();
        let one = alloc::format!("{pool:?}");
        assert_eq!(one.matches("block_size").count(), 1, "{one}");
        assert!(one.len() < 600, "{} bytes: {one}", one.len());
        // SAFETY: `b` came from `pool` with this layout and is not used again.
        unsafe { pool.deallocate(b.cast(), Layout::new::<[u8; 24]>()) };
    }

    #[test]
    fn options_are_normalized_to_class_sizes() {
        let o = SizeClassOptions {
            largest_pooled: 1000,
            page_size: 60_000,
            max_empty_pages: 1,
        }
        .normalized();
        assert_eq!(o.page_size, 65536);
        assert_eq!(o.largest_pooled, 1024);
        assert_eq!(class_size(class_of(o.largest_pooled)), o.largest_pooled);
    }
}
