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
//! A page that empties goes to a small cache of empty pages (at most `max_empty_pages` largest
//! pages' worth of bytes), and beyond the cache's limit back to the backing allocator, so the
//! memory held follows the live set down as well as up. Each class keeps the page it emptied
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
//! pages frees straight into the pages, so that they can empty.
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
use crate::arena::dangling;
use crate::reentry::BackingCall;

/// Every pooled block is aligned to this.
const CLASS_ALIGN: usize = 16;
/// Classes of the 16-byte-step range (16 ..= 128).
const SMALL_CLASSES: usize = 8;
/// Upper bound on the number of classes (page sizes are capped so that this suffices).
const MAX_CLASSES: usize = 64;
/// Largest page size accepted.
const MAX_PAGE_SIZE: usize = 1 << 20;
/// Pages are aligned to this, the address map's granule (so that no two pages share one).
const GRANULE_SHIFT: u32 = 12;
const GRANULE: usize = 1 << GRANULE_SHIFT;
/// Smallest `page_size` accepted.
const MIN_PAGE_SIZE: usize = GRANULE;
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
    /// Empty pages kept for reuse, counted in largest pages: the cache holds at most
    /// `max_empty_pages * page_size` bytes of empty pages (of any size), and pages emptied beyond
    /// that go back to the backing allocator. Default 4.
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

/// A page's header: one cache line (64 bytes on 64-bit targets, less on 32-bit ones; pages are
/// aligned to the granule, so it is one line exactly), what allocation and freeing read and
/// write first. The counts and sizes are bounded
/// by the largest page (1 MiB), so 32 bits hold them.
#[repr(C)]
struct PageHeader {
    free: Option<NonNull<u8>>,
    /// Next never-used block; `end` is one past the last block.
    carve: NonNull<u8>,
    end: NonNull<u8>,
    /// Links in the class's list of pages with free blocks, or in the empty-page cache.
    next: Option<Page>,
    prev: Option<Page>,
    /// Block size of the class.
    block: u32,
    live: u32,
    /// Blocks the page holds.
    slots: u32,
    /// Bytes of the page.
    size: u32,
    class: u8,
    in_list: bool,
}

const _: () = assert!(size_of::<PageHeader>() <= 64);

/// A page count or size as the header keeps it (all are below `MAX_PAGE_SIZE`).
fn narrow(n: usize) -> u32 {
    debug_assert!(n <= MAX_PAGE_SIZE);
    n as u32
}

/// Bytes before the first block of a page of `page_size` bytes: the header and, in debug
/// builds, one live bit per 16-byte unit of the page.
fn page_metadata(page_size: usize) -> usize {
    let bitmap = if cfg!(debug_assertions) {
        (page_size / CLASS_ALIGN).div_ceil(64) * 8
    } else {
        0
    };
    (size_of::<PageHeader>() + bitmap).next_multiple_of(CLASS_ALIGN)
}

/// A page, seen through its header pointer (a copyable handle; the pool owns the memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Page(NonNull<PageHeader>);

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

impl Page {
    fn size(self) -> usize {
        get!(self, size) as usize
    }

    fn slots(self) -> usize {
        get!(self, slots) as usize
    }

    fn live(self) -> usize {
        get!(self, live) as usize
    }

    fn block(self) -> usize {
        get!(self, block) as usize
    }

    fn class(self) -> usize {
        usize::from(get!(self, class))
    }

    /// (Re)formats the page for `class`: no block in use, all to be carved. `size` is the
    /// page's, which holds at least one block of the class.
    fn init(self, class: usize, size: usize) {
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
    fn pop(self) -> Option<NonNull<u8>> {
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

    fn is_full(self) -> bool {
        get!(self, free).is_none()
            && get!(self, end).addr().get() - get!(self, carve).addr().get() < self.block()
    }

    /// # Safety
    /// `p` is a block of this page in use, given back.
    unsafe fn push(self, p: NonNull<u8>) {
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
    fn swap_bit(self, p: NonNull<u8>, live: bool) -> bool {
        let first = self.0.addr().get() + page_metadata(self.size());
        let offset = p.addr().get().wrapping_sub(first);
        let block = self.block();
        if offset % block != 0 || p.addr().get() >= get!(self, end).addr().get() {
            panic!("arena-pool: SizeClassPool::deallocate: {p:p} was not allocated by this pool");
        }
        let unit = offset / CLASS_ALIGN;
        // SAFETY: `unit < size / 16`, and the bitmap has a bit per 16-byte unit of the page.
        unsafe { super::swap_live_bit(self.bits(), unit, live) }
    }
}

/// One class's state: what allocation and freeing use first, in the first cache line (the
/// struct is aligned to one), the page upkeep after.
#[repr(C, align(64))]
struct ClassState {
    // First cache line: what allocation and freeing read.
    /// Blocks freed last, kept out of their pages (still counted live there) and handed out
    /// first: a block freed and soon asked for again costs no page update (see `give_back`).
    recent: Cell<Option<NonNull<u8>>>,
    recent_count: Cell<usize>,
    /// The most blocks `recent` keeps.
    recent_limit: usize,
    /// Blocks out of their pages: in use, or on the recent list. The class's blocks in use are
    /// `out - recent_count` (see `live`), so that the recent list's two paths update one count.
    out: Cell<usize>,
    /// From this many blocks in use, a freed block goes to `recent` with no other check: three
    /// quarters of `capacity` when the class has two pages or more (below, it may leave a page
    /// to empty), half of it with one page (below half, blocks go back to their pages).
    recent_floor: Cell<usize>,
    /// Pages of this class with a free block; allocation takes from the first.
    available: Cell<Option<Page>>,
    /// Blocks the class's pages hold.
    capacity: Cell<usize>,
    /// A page left to empty: out of the list allocation takes from, and freed blocks of it go
    /// straight back to it while the class is below `recent_floor`.
    draining: Cell<Option<Page>>,
    // Second: page upkeep.
    /// The last page of `available`.
    available_tail: Cell<Option<Page>>,
    pages: Cell<usize>,
    /// Bytes of the class's pages.
    bytes: Cell<usize>,
    /// Blocks of the class's first page.
    first_blocks: usize,
    /// Bytes of a page of one block of the class (the least a cached page needs).
    one_block_page: usize,
    /// The page the class emptied last, kept for it (counted in the cache of empty pages).
    spare: Cell<Option<Page>>,
}

impl ClassState {
    fn new(class: usize) -> ClassState {
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
    fn count_page(&self, bytes: usize, slots: usize, add: bool) {
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
    fn arm_floor(&self) {
        let capacity = self.capacity.get();
        self.recent_floor.set(if self.pages.get() >= 2 {
            capacity - capacity / DRAIN_SHARE
        } else {
            capacity.div_ceil(2)
        });
    }

    /// The class's blocks in use.
    #[inline]
    fn live(&self) -> usize {
        self.out.get() - self.recent_count.get()
    }

    /// Takes the newest block off the recent list.
    #[inline]
    fn take_recent(&self) -> Option<NonNull<u8>> {
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
    unsafe fn keep_recent(&self, p: NonNull<u8>) {
        // SAFETY: the block is free, 16-aligned and at least 16 bytes long (caller).
        unsafe { p.cast::<Option<NonNull<u8>>>().write(self.recent.get()) };
        self.recent.set(Some(p));
        self.recent_count.set(self.recent_count.get() + 1);
    }
}

/// The bytes of a page of exactly `blocks` blocks of `block` bytes: its metadata and the
/// blocks, with no tail.
fn page_bytes(blocks: usize, block: usize) -> usize {
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
    fallback_blocks: Cell<usize>,
    /// Set while a page is taken from `alloc` (see [`BackingCall`]).
    backing_call: BackingCall,
    alloc: A,
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
    /// - **`alloc` may panic**: the pool is then as it was before the request (a new page is
    ///   taken only after the address map has made room for it, so none is lost), and usable.
    /// - **`alloc`'s `deallocate` may panic** (when a page or a large block goes back, in
    ///   `deallocate`, [`trim`](Self::trim) or the pool's drop): the pool then no longer refers
    ///   to the block it was giving back, and keeps, usable, the pages it had not given back yet
    ///   (a drop leaves them, and the address map's table, to `alloc`). Such a `deallocate` must
    ///   leave its block allocated (it is leaked), as for [`Pool::new_in`](crate::Pool::new_in).
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
            fallback_blocks: Cell::new(0),
            backing_call: BackingCall::new(),
            alloc,
        }
    }

    /// The options in force (normalized: see [`SizeClassOptions`]).
    pub fn options(&self) -> SizeClassOptions {
        self.options
    }

    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        &self.alloc
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

    #[inline]
    fn take(&self, class: usize) -> Result<NonNull<u8>, AllocError> {
        // `class_of` maps every pooled size to a valid class: the checked forms (here and below)
        // cost a compare and keep the fallible API free of panicking paths.
        let state = self.classes.get(class).ok_or(AllocError)?;
        if let Some(p) = state.take_recent() {
            #[cfg(debug_assertions)]
            if let Some(base) = self.map.get(p.addr().get()) {
                Page(base.cast()).swap_bit(p, true);
            }
            return Ok(p);
        }
        let page = match state.available.get() {
            Some(page) => page,
            None => self.new_page(class)?,
        };
        // A page on the available list always has a free block.
        let p = page.pop().ok_or(AllocError)?;
        if page.is_full() {
            self.unlink(page, state);
        }
        state.out.set(state.out.get() + 1);
        #[cfg(debug_assertions)]
        page.swap_bit(p, true);
        Ok(p)
    }

    /// Gives `class` a page with room: a cached empty page (see `take_cached`), or a new one
    /// sized by the class's population (see the module docs).
    ///
    /// A new page is taken after the address map has made room for it, so that once the page is
    /// taken nothing can fail or call the backing allocator before it is registered. While the
    /// backing allocator runs the pool is marked busy, and a nested call for a page is refused.
    #[cold]
    fn new_page(&self, class: usize) -> Result<Page, AllocError> {
        // A backing allocator that allocates from this pool while it takes a page: the outer
        // call has reserved room in the address map and is about to link its page.
        let state = self.classes.get(class).ok_or(AllocError)?;
        if let Some(page) = state.draining.take() {
            // The class needs its room again: the page it left to empty takes blocks again
            // (it has free blocks: it was listed when it was left to empty).
            self.push_front(page, state);
            return Ok(page);
        }
        if self.backing_call.in_progress() {
            return Err(AllocError);
        }
        let block = class_size(class);
        let first = state.first_blocks;
        let page = match self.take_cached(class, state) {
            Some(page) => page,
            None => {
                // An eighth of what the class holds, at least the first page's blocks, at most
                // a largest page's (which holds eight or more: see the options).
                let most = (self.options.page_size - page_metadata(self.options.page_size)) / block;
                let blocks = match state.bytes.get() {
                    0 => first,
                    held => {
                        // Whole granules: the map registers whole granules anyway.
                        let bytes = (held / 8).max(LATER_MIN).next_multiple_of(GRANULE);
                        ((bytes - page_metadata(bytes)) / block)
                            .min(most)
                            .max(first)
                    }
                };
                self.new_page_from_backing(page_bytes(blocks, block))?
            }
        };
        page.init(class, page.size());
        set!(page, in_list, false);
        self.push_front(page, state);
        state.count_page(page.size(), page.slots(), true);
        Ok(page)
    }

    /// Takes a cached empty page for `class` off the cache: the class's own spare (the page it
    /// emptied last), else a cached page last formatted for the class (so that a steady loop
    /// gets back the pages it had), else the first cached page that holds one of its blocks,
    /// else the first other class's spare that does (the pool takes no new memory while it holds
    /// an empty page that fits).
    fn take_cached(&self, class: usize, state: &ClassState) -> Option<Page> {
        let min = state.one_block_page;
        let page = match state.spare.take() {
            Some(page) => page,
            None => {
                let mut found: Option<(Option<Page>, Page)> = None;
                let mut prev: Option<Page> = None;
                let mut cur = self.empty.get();
                while let Some(page) = cur {
                    if page.class() == class {
                        found = Some((prev, page));
                        break;
                    }
                    if found.is_none() && page.size() >= min {
                        found = Some((prev, page));
                    }
                    prev = cur;
                    cur = get!(page, next);
                }
                match found {
                    Some((prev, page)) => {
                        let next = get!(page, next);
                        match prev {
                            Some(p) => set!(p, next, next),
                            None => self.empty.set(next),
                        }
                        page
                    }
                    // Another class's spare, rather than more memory.
                    None => self
                        .classes
                        .iter()
                        .find(|other| other.spare.get().is_some_and(|p| p.size() >= min))?
                        .spare
                        .take()?,
                }
            }
        };
        self.uncache(page);
        Some(page)
    }

    /// Takes a page that left the cache of empty pages (a class's spare or the shared list) out
    /// of the cache's counts.
    fn uncache(&self, page: Page) {
        self.empty_count.set(self.empty_count.get() - 1);
        self.empty_bytes.set(self.empty_bytes.get() - page.size());
    }

    /// A page of `size` bytes aligned to the granule from the backing allocator, registered in
    /// the address map (through which `Drop` finds every page held).
    fn new_page_from_backing(&self, size: usize) -> Result<Page, AllocError> {
        let layout = Layout::from_size_align(size, GRANULE).map_err(|_| AllocError)?;
        let granules = size.div_ceil(GRANULE);
        let block = self.backing_call.run(|| {
            self.map.reserve(granules, &self.alloc)?;
            self.alloc.allocate(layout)
        })?;
        // The room reserved above is still there: no call into the backing allocator.
        if let Err(e) = self.map.insert(block.cast(), granules, &self.alloc) {
            // SAFETY: the block is ours, fresh, and not registered anywhere.
            unsafe { self.alloc.deallocate(block.cast(), layout) };
            return Err(e);
        }
        let page = Page(block.cast());
        set!(page, size, narrow(size));
        self.pages.set(self.pages.get() + 1);
        self.bytes_held.set(self.bytes_held.get() + size);
        Ok(page)
    }

    /// Puts `page` first in its class's list of pages with room (the one allocation takes from).
    fn push_front(&self, page: Page, class: &ClassState) {
        set!(page, prev, None);
        set!(page, next, class.available.get());
        match class.available.get() {
            Some(first) => set!(first, prev, Some(page)),
            None => class.available_tail.set(Some(page)),
        }
        class.available.set(Some(page));
        set!(page, in_list, true);
    }

    /// Puts `page` last in its class's list of pages with room.
    fn push_back(&self, page: Page, class: &ClassState) {
        set!(page, next, None);
        set!(page, prev, class.available_tail.get());
        match class.available_tail.get() {
            Some(last) => set!(last, next, Some(page)),
            None => class.available.set(Some(page)),
        }
        class.available_tail.set(Some(page));
        set!(page, in_list, true);
    }

    fn unlink(&self, page: Page, class: &ClassState) {
        let (prev, next) = (get!(page, prev), get!(page, next));
        match prev {
            Some(p) => set!(p, next, next),
            None => class.available.set(next),
        }
        match next {
            Some(n) => set!(n, prev, prev),
            None => class.available_tail.set(prev),
        }
        set!(page, in_list, false);
    }

    /// # Safety
    /// `p` is a block of class `class` in use.
    #[inline]
    unsafe fn give_back(&self, p: NonNull<u8>, class: usize) {
        let Some(base) = self.map.get(p.addr().get()) else {
            #[cfg(debug_assertions)]
            panic!("arena-pool: SizeClassPool::deallocate: {p:p} was not allocated by this pool");
            #[cfg(not(debug_assertions))]
            return; // not ours: only a broken contract gets here, and nothing is touched
        };
        let page = Page(base.cast());
        // Our own pointer to the block, with the page's provenance.
        let p = base.with_addr(p.addr());
        #[cfg(debug_assertions)]
        {
            if page.class() != class || page.block() != class_size(class) {
                panic!(
                    "arena-pool: SizeClassPool::deallocate: {p:p} was allocated with another layout"
                );
            }
            if !page.swap_bit(p, false) {
                panic!("arena-pool: SizeClassPool::deallocate: double free of {p:p}");
            }
        }
        let Some(state) = self.classes.get(class) else {
            return; // not a class of ours: only a broken contract gets here
        };
        // The blocks in use once this one is freed.
        let live = state.live() - 1;
        // Kept out of its page while the class's pages are at least half in use: a class whose
        // population falls gives its blocks back to their pages, so that the pages can empty.
        // Between a half and three quarters in use (two pages or more), the class leaves a page
        // to empty, and that page's blocks go back to it.
        if live != 0
            && state.recent_count.get() < state.recent_limit
            && (live >= state.recent_floor.get()
                || (live * 2 >= state.capacity.get() && self.drains_elsewhere(page, state)))
        {
            // SAFETY: the block is ours, no longer in use, re-derived from its page above.
            unsafe { state.keep_recent(p) };
            return;
        }
        // SAFETY: the block is ours and no longer in use.
        unsafe { self.return_to_page(page, p, state) };
        if live == 0 && state.recent_count.get() != 0 {
            // The class's last block: its pages can empty now.
            self.flush_recent(state);
        }
    }

    /// For a class of two pages or more with between a half and three quarters of its blocks
    /// in use: leaves a page to empty if none is, and tells whether that page is not `page`
    /// (whose freed block then goes back to it).
    #[inline]
    fn drains_elsewhere(&self, page: Page, state: &ClassState) -> bool {
        if state.draining.get().is_none() {
            self.start_draining(state);
        }
        state.draining.get() != Some(page)
    }

    /// Leaves one page of the class to empty (see the module docs): the emptiest of the first
    /// [`DRAIN_SCAN`] pages with room leaves the list allocation takes from. A class with one
    /// page keeps it.
    #[cold]
    #[inline(never)]
    fn start_draining(&self, state: &ClassState) {
        if state.pages.get() < 2 {
            state.recent_floor.set(state.capacity.get().div_ceil(2));
            return;
        }
        let mut best: Option<Page> = None;
        let mut cur = state.available.get();
        let mut n = 0;
        while let Some(page) = cur {
            if best.is_none_or(|b| page.live() < b.live()) {
                best = Some(page);
            }
            n += 1;
            if n == DRAIN_SCAN {
                break;
            }
            cur = get!(page, next);
        }
        let Some(page) = best else {
            // Nothing to leave (every page is full, the free blocks are recent ones): no more
            // tries until a page has room again.
            state.recent_floor.set(state.capacity.get().div_ceil(2));
            return;
        };
        self.unlink(page, state);
        state.draining.set(Some(page));
    }

    /// Puts the class's recent blocks back in their pages.
    #[cold]
    fn flush_recent(&self, state: &ClassState) {
        while let Some(p) = state.take_recent() {
            if let Some(base) = self.map.get(p.addr().get()) {
                // SAFETY: a recent block is a free block of its page, with the page's
                // provenance (`give_back` re-derived it).
                unsafe { self.return_to_page(Page(base.cast()), p, state) };
            }
        }
    }

    /// Gives a free block back to its page; a page that empties goes to the cache or back to
    /// the backing allocator.
    ///
    /// # Safety
    /// `p` is a block of `page`, of the class of `state`, that is no longer in use (and not on
    /// any list), with the page's provenance.
    #[inline]
    unsafe fn return_to_page(&self, page: Page, p: NonNull<u8>, state: &ClassState) {
        state.out.set(state.out.get() - 1);
        // SAFETY: forwarded from the caller.
        unsafe { page.push(p) };
        if page.live() == 0 {
            let drained = state.draining.get() == Some(page);
            if drained {
                state.draining.set(None);
            }
            if state.pages.get() == 1 && page.size() <= KEEP_IN_PLACE {
                // The class's only page, and a small one: it stays formatted for the class, in
                // its list, ready for the class's next block (a `Vec` that grows through the
                // classes empties a page at each step and needs one at the next).
                if !get!(page, in_list) {
                    self.push_front(page, state);
                }
                return;
            }
            self.detach(page, state);
            let cached = self.empty_bytes.get() + page.size();
            if cached
                <= self
                    .options
                    .max_empty_pages
                    .saturating_mul(self.options.page_size)
            {
                // The class's spare if it has none, else in the shared cache; a page the class
                // left to empty goes to the shared cache, for any class.
                match state.spare.get() {
                    None if !drained => state.spare.set(Some(page)),
                    _ => {
                        set!(page, next, self.empty.get());
                        self.empty.set(Some(page));
                    }
                }
                self.empty_count.set(self.empty_count.get() + 1);
                self.empty_bytes.set(cached);
            } else {
                // SAFETY: the page is empty (a class's recent blocks count as in use in their
                // pages, so none is this page's), out of its class's list and counts, no longer
                // draining, and not cached.
                unsafe { self.release(page) };
            }
        } else if state.draining.get() == Some(page) {
            // Left to empty: not listed.
        } else {
            if !get!(page, in_list) {
                // A full page that gets a free block goes last, and a page already listed keeps its
                // place: allocation stays on the pages in front (the current page's freed blocks
                // come back first), so those at the back are left to empty and go back to the
                // backing allocator.
                self.push_back(page, state);
                // A page has room again: the class may leave one to empty again.
                state.arm_floor();
            }
            if state.draining.get().is_none() && state.live() < state.recent_floor.get() {
                self.start_draining(state);
            }
        }
    }

    /// Takes an empty page out of its class: out of the class's list, and out of its counts.
    fn detach(&self, page: Page, state: &ClassState) {
        if get!(page, in_list) {
            self.unlink(page, state);
        }
        state.count_page(page.size(), page.slots(), false);
    }

    /// Returns a page to the backing allocator: out of the counts and the address map first, so
    /// that when the backing allocator's `deallocate` unwinds, nothing in the pool refers to it.
    ///
    /// # Safety
    /// The page holds no block in use (nor recently freed blocks), is in no class list, is
    /// neither a class's spare nor draining page, and is out of the cache and its counts.
    unsafe fn release(&self, page: Page) {
        let size = page.size();
        self.pages.set(self.pages.get() - 1);
        self.bytes_held.set(self.bytes_held.get() - size);
        self.map.remove(page.0.cast(), size.div_ceil(GRANULE));
        // SAFETY: forwarded from the caller.
        unsafe { self.free_page(page) };
    }

    /// Gives a page's memory back to the backing allocator.
    ///
    /// # Safety
    /// The page holds no block in use and is not used again.
    unsafe fn free_page(&self, page: Page) {
        // SAFETY: the page came from `self.alloc` with this size and the granule's alignment
        // (`new_page_from_backing`).
        unsafe {
            self.alloc.deallocate(
                page.0.cast(),
                Layout::from_size_align_unchecked(page.size(), GRANULE),
            )
        };
    }

    // ----- the Allocator rules -----

    #[inline]
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

/// A snapshot of a [`SizeClassPool`]'s memory, from [`SizeClassPool::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

#[cfg(test)]
mod tests {
    use super::*;

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
