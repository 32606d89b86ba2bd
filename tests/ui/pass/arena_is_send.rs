// `Arena` is `Send`: it can move to another thread (and `&Arena` stays on one).
fn main() {
    let arena = arena_pool::Arena::new();
    arena.alloc(1u8);
    let used = std::thread::spawn(move || {
        arena.alloc(2u8);
        arena.used_bytes()
    })
    .join()
    .unwrap();
    assert_eq!(used, 2);
}
