// A `Vec<_, &Arena>` cannot outlive its arena.
use arena_pool::Arena;
use arena_pool::allocator_api2::vec::Vec;

fn main() {
    let v: Vec<u32, &Arena>;
    {
        let arena = Arena::new();
        v = Vec::new_in(&arena);
    }
    println!("{}", v.len());
}
