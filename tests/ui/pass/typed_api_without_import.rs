// Every method of the typed API is inherent on every arena type: callable with no
// `use arena_pool::BumpAlloc;` (as the seed README's examples do), and, with the trait in scope
// too, with no ambiguity. A method of the trait without its forwarder fails to compile here.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, ArenaRef, LocalArena, SyncArena};

macro_rules! every_method {
    ($a:expr) => {
        match $a {
            a => {
                let _: &mut u8 = a.alloc(1u8);
                let _: &mut u8 = a.try_alloc(1u8).unwrap();
                let _: &mut u8 = a.alloc_with(|| 1u8);
                let _: &mut u8 = a.try_alloc_with(|| 1u8).unwrap();
                let _: &mut u8 = a.alloc_try_with(|| Ok::<u8, ()>(1)).unwrap();
                let _: &mut u8 = a.try_alloc_try_with(|| Ok::<u8, ()>(1)).unwrap();
                let _ = a.alloc_layout(core::alloc::Layout::new::<u64>());
                let _ = a.try_alloc_layout(core::alloc::Layout::new::<u64>()).unwrap();
                let _: &mut [u8] = a.alloc_slice_copy(&[1u8, 2]);
                let _: &mut [u8] = a.try_alloc_slice_copy(&[1u8, 2]).unwrap();
                let _: &mut [u8] = a.alloc_slice_clone(&[1u8, 2]);
                let _: &mut [u8] = a.try_alloc_slice_clone(&[1u8, 2]).unwrap();
                let _: &mut [usize] = a.alloc_slice_fill_with(2, |i| i);
                let _: &mut [usize] = a.try_alloc_slice_fill_with(2, |i| i).unwrap();
                let _: &mut [usize] = a.alloc_slice_try_fill_with(2, Ok::<usize, ()>).unwrap();
                let _: &mut [usize] = a.try_alloc_slice_try_fill_with(2, Ok::<usize, ()>).unwrap();
                let _: &mut [u8] = a.alloc_slice_fill_copy(2, 1u8);
                let _: &mut [u8] = a.try_alloc_slice_fill_copy(2, 1u8).unwrap();
                let _: &mut [u8] = a.alloc_slice_fill_clone(2, &1u8);
                let _: &mut [u8] = a.try_alloc_slice_fill_clone(2, &1u8).unwrap();
                let _: &mut [u8] = a.alloc_slice_fill_default(2);
                let _: &mut [u8] = a.try_alloc_slice_fill_default(2).unwrap();
                let _: &mut [u8] = a.alloc_slice_fill_iter(0..2u8);
                let _: &mut [u8] = a.try_alloc_slice_fill_iter(0..2u8).unwrap();
                let _: &mut [u8] = a.alloc_slice_try_fill_iter((0..2u8).map(Ok::<u8, ()>)).unwrap();
                let _: &mut [u8] =
                    a.try_alloc_slice_try_fill_iter((0..2u8).map(Ok::<u8, ()>)).unwrap();
                let _: &mut [u8; 2] = a.alloc_sized_slice_fill_default::<u8, 2>();
                let _: &mut [u8; 2] = a.try_alloc_sized_slice_fill_default::<u8, 2>().unwrap();
                let _: &mut [u8; 2] = a.alloc_sized_slice_fill_with::<u8, 2, _>(|i| i as u8);
                let _: &mut [u8; 2] =
                    a.try_alloc_sized_slice_fill_with::<u8, 2, _>(|i| i as u8).unwrap();
                let _: &mut [u8; 2] = a.alloc_sized_slice_copy(&[1u8, 2]);
                let _: &mut [u8; 2] = a.try_alloc_sized_slice_copy(&[1u8, 2]).unwrap();
                let _: &mut str = a.alloc_str("s");
                let _: &mut str = a.try_alloc_str("s").unwrap();
                let _: &mut str = a.alloc_fmt(format_args!("{}", 1));
                let _: &mut str = a.try_alloc_fmt(format_args!("{}", 1)).unwrap();
            }
        }
    };
}

fn without_the_trait() {
    let mut arena = Arena::new();
    every_method!(&arena);
    every_method!(arena.as_arena_ref());
    arena.with_scope(|scope| every_method!(scope));
    every_method!(&arena.scope_guard());
    let mut v = Vec::new_in(&arena);
    v.push(1u8);
    let _: &mut [u8] = Arena::into_slice(v);
    let mut v = Vec::new_in(arena.as_arena_ref());
    v.push(1u8);
    let _: &mut [u8] = ArenaRef::into_slice(v);
    let shared = SyncArena::new();
    every_method!(&shared);
    every_method!(&shared.local());
    let mut v = Vec::new_in(&shared);
    v.push(1u8);
    let _: &mut [u8] = SyncArena::into_slice(v);
    let local = shared.local();
    let mut v = Vec::new_in(&local);
    v.push(1u8);
    let _: &mut [u8] = LocalArena::into_slice(v);
}

mod with_the_trait {
    use arena_pool::{Arena, BumpAlloc, SyncArena};

    fn generic<X: BumpAlloc + ?Sized>(a: &X) -> &u8 {
        a.alloc(1)
    }

    pub fn run() {
        let mut arena = Arena::new();
        every_method!(&arena);
        arena.with_scope(|scope| every_method!(scope));
        every_method!(&arena.scope_guard());
        let shared = SyncArena::new();
        every_method!(&shared);
        every_method!(&shared.local());
        assert_eq!(*generic(&arena) + *generic(&shared), 2);
    }
}

fn main() {
    without_the_trait();
    with_the_trait::run();
}
