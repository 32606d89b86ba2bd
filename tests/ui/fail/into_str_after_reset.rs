// Text from `LocalArena::into_str` outlives the handle, not a reset of its `SyncArena`.
use arena_pool::{LocalArena, SyncArena, format_in};

fn main() {
    let mut shared = SyncArena::new();
    let s = {
        let local = shared.local();
        LocalArena::into_str(format_in!(&local, "{}", 1))
    };
    shared.reset();
    println!("{s}");
}
