// The states of two `LocalArena` handles cannot be swapped through their `&mut ArenaRef` views
// (`ArenaRef` is unsized).
fn main() {
    let shared = arena_pool::SyncArena::new();
    let mut a = shared.local();
    let mut b = shared.local();
    std::mem::swap(a.as_arena_ref_mut(), b.as_arena_ref_mut());
}
