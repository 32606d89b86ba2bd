// A `Vec<_, &Arena>` that ends before its arena, and one moved into a scope's result by value.
use arena_pool::Arena;
use arena_pool::allocator_api2::vec::Vec;

fn main() {
    let mut arena = Arena::new();
    {
        let mut v = Vec::new_in(&arena);
        v.extend([1u32, 2, 3]);
        assert_eq!(v.len(), 3);
    }
    let sum: u32 = arena.with_scope(|scope| {
        let mut v = Vec::new_in(&*scope);
        v.extend([4u32, 5]);
        v.iter().sum()
    });
    assert_eq!(sum, 9);
}
