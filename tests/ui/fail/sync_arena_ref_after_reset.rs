// A reference from the shared path of a `SyncArena` cannot survive its reset.
use arena_pool::SyncArena;

fn main() {
    let mut shared = SyncArena::new();
    let x = shared.alloc_fmt(format_args!("{}", 1));
    shared.reset();
    println!("{x}");
}
