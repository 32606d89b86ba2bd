//! The optional allocator-api2 0.3 / 0.4 impls: each version's own `Vec` and `Box` run on every
//! type, with the same in-place behaviour as the main 0.2 impl.
//! Run with `cargo test --features allocator-api2-03,allocator-api2-04 --test bridges`.
#![cfg(any(feature = "allocator-api2-03", feature = "allocator-api2-04"))]
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;

use arena_pool::{Arena, Pool, SizeClassPool, SyncArena, SyncPool};

/// The same checks for one allocator-api2 version.
macro_rules! bridge_tests {
    ($name:ident, $krate:ident) => {
        mod $name {
            use super::*;
            use $krate::boxed::Box;
            use $krate::vec::Vec;

            #[test]
            fn arena_vec_grows_in_place_and_box_rolls_back() {
                // Room for the 64 elements in the first chunk.
                let mut arena = Arena::with_capacity(1024);
                let mut v: Vec<u32, &Arena> = Vec::with_capacity_in(4, &arena);
                v.push(0);
                let first = v.as_ptr();
                for i in 1..64 {
                    v.push(i);
                }
                assert_eq!(v.as_ptr(), first, "the last block grows in place");
                assert!(v.iter().copied().eq(0..64));
                drop(v);
                let used = arena.used_bytes();
                let b = Box::new_in([7u64; 4], &arena);
                assert_eq!(b[3], 7);
                drop(b);
                assert_eq!(arena.used_bytes(), used, "dropping the last box rolls back");
                arena.with_scope(|scope| {
                    let mut v = Vec::new_in(&*scope);
                    v.extend_from_slice(b"scoped");
                    assert_eq!(&v[..], b"scoped");
                });
            }

            #[test]
            fn pools_reuse_blocks() {
                let pool = Pool::for_type::<[u64; 2]>();
                let a = Box::new_in([1u64, 2], &pool);
                let addr = &*a as *const [u64; 2];
                drop(a);
                let b = Box::new_in([3u64, 4], &pool);
                assert_eq!(&*b as *const [u64; 2], addr);
                assert_eq!(pool.in_use(), 1);

                let classes = SizeClassPool::new();
                let mut v: Vec<u8, &SizeClassPool> = Vec::new_in(&classes);
                v.extend(0..200u8);
                assert!(v.iter().copied().eq(0..200));
                assert_eq!(classes.stats().live_blocks(), 1);
                drop(v);
                assert_eq!(classes.stats().live_blocks(), 0);
            }

            #[test]
            fn thread_safe_types_implement_it_too() {
                let shared = SyncArena::new();
                let mut v: Vec<u32, &SyncArena> = Vec::new_in(&shared);
                v.extend(0..100);
                let local = shared.local();
                let b = Box::new_in(5u64, &local);
                let pool = SyncPool::for_type::<u64>();
                let c = Box::new_in(6u64, &pool);
                assert_eq!((v[99], *b, *c), (99, 5, 6));
            }

            #[test]
            fn errors_convert() {
                use $krate::alloc::Allocator;
                let arena = Arena::new();
                arena.set_allocation_limit(Some(1024));
                let huge = Layout::from_size_align(1 << 20, 8).unwrap();
                assert_eq!(
                    Allocator::allocate(&arena, huge),
                    Err($krate::alloc::AllocError)
                );
                assert!(Allocator::allocate(&arena, Layout::new::<u64>()).is_ok());
            }
        }
    };
}

#[cfg(feature = "allocator-api2-03")]
bridge_tests!(v03, allocator_api2_03);
#[cfg(feature = "allocator-api2-04")]
bridge_tests!(v04, allocator_api2_04);
