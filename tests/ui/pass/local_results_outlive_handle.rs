// The references of a `LocalArena` (its typed helpers, its `ArenaRef` view, a `Vec` turned into
// a slice, a `String` turned into a `str`) outlive the handle: the blocks belong to the `SyncArena`.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{LocalArena, SyncArena, format_in};

fn main() {
    let mut shared = SyncArena::new();
    let (a, b, c, d) = {
        let local = shared.local();
        let mut v = Vec::new_in(&local);
        v.extend([1u32, 2, 3]);
        let c: &mut [u32] = LocalArena::into_slice(v);
        let d: &mut str = LocalArena::into_str(format_in!(&local, "d{}", 4));
        (local.alloc(1u8), local.as_arena_ref().alloc_str("b"), c, d)
    };
    assert_eq!((*a, &*b, &*c, &*d), (1, "b", &[1, 2, 3][..], "d4"));
    shared.reset();
}
