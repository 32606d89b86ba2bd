//! How blocks leave their class and come back, and how pages move between the classes, the
//! cache of empty pages and the backing allocator (the policy the module documentation of
//! [`SizeClassPool`] describes).

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use super::class_state::ClassState;
use super::classes::class_size;
use super::page::{GRANULE, Page, get, narrow, page_bytes, page_metadata, set};
use super::{DRAIN_SCAN, KEEP_IN_PLACE, LATER_MIN, SizeClassPool, WINDOW_MIN};

impl<A: Allocator> SizeClassPool<A> {
    #[inline]
    pub(super) fn take(&self, class: usize) -> Result<NonNull<u8>, AllocError> {
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

    /// Gives `class` a page with room: a cached empty page (see `take_cached`), one that empties
    /// when the recent blocks go back (see `reclaim`), or a new one sized by the class's
    /// population (see the module docs).
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
            self.alloc.refused_otherwise();
            return Err(AllocError);
        }
        let block = class_size(class);
        let first = state.first_blocks;
        let page = match self
            .take_cached(class, state)
            .or_else(|| self.reclaim(class, state))
        {
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

    /// Before the pool takes new memory for `class`: puts every class's recent blocks back in
    /// their pages, and takes a page that empties so off the cache (see `take_cached`). Recent
    /// blocks count as in use in their pages, so a page of another class can hold nothing else
    /// and still not be empty; the pool takes no new memory while such a page, emptied, would
    /// fit.
    #[cold]
    #[inline(never)]
    fn reclaim(&self, class: usize, state: &ClassState) -> Option<Page> {
        let mut any = false;
        for other in &self.classes {
            if other.recent_count.get() != 0 {
                self.flush_recent(other);
                any = true;
            }
        }
        if any {
            self.take_cached(class, state)
        } else {
            None
        }
    }

    /// Takes a page that left the cache of empty pages (a class's spare or the shared list) out
    /// of the cache's counts.
    pub(super) fn uncache(&self, page: Page) {
        self.empty_count.set(self.empty_count.get() - 1);
        let bytes = self.empty_bytes.get() - page.size();
        self.empty_bytes.set(bytes);
        self.cache_low.set(self.cache_low.get().min(bytes));
    }

    /// A page of `size` bytes aligned to the granule from the backing allocator, registered in
    /// the address map (through which `Drop` finds every page held).
    fn new_page_from_backing(&self, size: usize) -> Result<Page, AllocError> {
        let layout = Layout::from_size_align(size, GRANULE).map_err(|_| AllocError)?;
        if !self.alloc.admits(size) {
            return Err(AllocError);
        }
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
    pub(super) unsafe fn give_back(&self, p: NonNull<u8>, class: usize) {
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
    pub(super) fn flush_recent(&self, state: &ClassState) {
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
                // It counts as emptied: a loop that runs in such pages alone still moves the
                // windows on, and the cache gives back what the loop does not ask for.
                self.count_emptied();
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
            // Counted once the page is settled: a backing allocator's `deallocate` that
            // unwinds in `release` leaves the counts as they were.
            self.count_emptied();
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

    /// Counts a page that emptied; the last one of a window starts the next.
    #[inline]
    fn count_emptied(&self) {
        let left = self.window_left.get() - 1;
        if left != 0 {
            self.window_left.set(left);
        } else {
            self.next_window();
        }
    }

    /// Starts a window of page empties (twice as many as the pool holds pages, at least
    /// [`WINDOW_MIN`]) and gives back the pages of the cache that no class needed during the
    /// window that ends: as many bytes as the cache never went below, newest pages first, then
    /// the classes' spares. A loop whose cycles fill and empty the pool needs one cycle's
    /// empties at most, so each window holds a whole cycle, and the cache keeps what a cycle
    /// takes out of it.
    #[cold]
    #[inline(never)]
    fn next_window(&self) {
        self.window_left
            .set(self.pages.get().saturating_mul(2).max(WINDOW_MIN));
        let keep = self.empty_bytes.get() - self.cache_low.get();
        loop {
            // The shared list's first page, else a class's spare (and that class).
            let (page, spare_of) = match self.empty.get() {
                Some(page) => (page, None),
                None => match self.classes.iter().find_map(|c| Some((c.spare.get()?, c))) {
                    Some((page, c)) => (page, Some(c)),
                    None => break,
                },
            };
            if self.empty_bytes.get() - page.size() < keep {
                break;
            }
            match spare_of {
                Some(c) => c.spare.set(None),
                None => self.empty.set(get!(page, next)),
            }
            self.uncache(page);
            // SAFETY: a cached page is empty, and now out of the cache and of every list.
            unsafe { self.release(page) };
        }
        self.cache_low.set(self.empty_bytes.get());
    }

    /// Takes an empty page out of its class: out of the class's list, and out of its counts.
    pub(super) fn detach(&self, page: Page, state: &ClassState) {
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
    ///
    /// Out of line: a call into the backing allocator, rare on the free path that reaches it.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn release(&self, page: Page) {
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
    pub(super) unsafe fn free_page(&self, page: Page) {
        // SAFETY: the page came from `self.alloc` with this size and the granule's alignment
        // (`new_page_from_backing`).
        unsafe {
            self.alloc.deallocate(
                page.0.cast(),
                Layout::from_size_align_unchecked(page.size(), GRANULE),
            )
        };
    }
}
