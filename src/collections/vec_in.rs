//! [`vec_in!`](crate::vec_in): `vec!` for allocator-api2's `Vec` in any allocator.

/// Creates an allocator-api2 [`Vec`](allocator_api2::vec::Vec) in an allocator, as `vec!` does in
/// the global one: `vec_in![alloc; a, b, c]`, `vec_in![alloc; value; n]` (the value cloned `n`
/// times, as `vec![value; n]`) and `vec_in![alloc]` (empty). The elements' block is taken once,
/// of exactly their number; every allocator of the crate works (`&Arena`, `&SyncArena`,
/// `&LocalArena`, an `ArenaRef`, a pool), with no dependency on allocator-api2 in the caller's
/// `Cargo.toml`.
///
/// # Panics
/// As `Vec::with_capacity_in`: when the allocator refuses the block (see
/// [`Arena::set_panic_on_limit`](crate::Arena::set_panic_on_limit) for an arena's limit) or the
/// capacity overflows.
///
/// ```
/// use arena_pool::{Arena, vec_in};
///
/// let arena = Arena::new();
/// let v = vec_in![&arena; 1, 2, 3];
/// assert_eq!(v, [1, 2, 3]);
/// let zeros = vec_in![&arena; 0u8; 16];
/// assert_eq!(zeros.len(), 16);
/// let mut empty = vec_in![&arena];
/// empty.push("later");
/// assert_eq!(empty, ["later"]);
/// ```
#[macro_export]
macro_rules! vec_in {
    ($alloc:expr $(,)?) => {
        $crate::allocator_api2::vec::Vec::new_in($alloc)
    };
    ($alloc:expr; $elem:expr; $n:expr $(,)?) => {{
        let n = $n;
        let mut v = $crate::allocator_api2::vec::Vec::with_capacity_in(n, $alloc);
        v.resize(n, $elem);
        v
    }};
    ($alloc:expr; $($x:expr),+ $(,)?) => {{
        let items = [$($x),+];
        let mut v = $crate::allocator_api2::vec::Vec::with_capacity_in(items.len(), $alloc);
        v.extend(items);
        v
    }};
}
