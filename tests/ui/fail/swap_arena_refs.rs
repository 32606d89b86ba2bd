// The states of two arenas cannot be swapped through `&mut ArenaRef` (it is unsized).
fn main() {
    let mut a = arena_pool::Arena::new();
    let mut b = arena_pool::Arena::new();
    std::mem::swap(a.as_arena_ref_mut(), b.as_arena_ref_mut());
}
