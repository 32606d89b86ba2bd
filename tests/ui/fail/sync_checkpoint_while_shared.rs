// `SyncArena::checkpoint` and scopes take `&mut self`: not while another borrow (a handle, a
// block) is alive.
use arena_pool::SyncArena;

fn main() {
    let mut arena = SyncArena::new();
    let local = arena.local();
    let cp = arena.checkpoint();
    local.alloc(1u8);
    let _ = cp;
}
