// A slice from `LocalArena::into_slice` outlives the handle, not the `SyncArena`.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{LocalArena, SyncArena};

fn main() {
    let s;
    {
        let shared = SyncArena::new();
        let local = shared.local();
        let mut v = Vec::new_in(&local);
        v.push(1u32);
        s = LocalArena::into_slice(v);
    }
    println!("{s:?}");
}
