//! The guide: how the types behave, chapter by chapter, beyond what README's sections say. The
//! same text is in `docs/guide/` in the repository; here its examples run as doctests.
//!
//! (Each chapter's links to another chapter are reference links, defined at the end of its file
//! for the repository and, before the file, here for rustdoc: the first definition is the one
//! that counts.)
//!
//! - [Collections, strings and the typed API](collections): `BumpAlloc`, `String`, `format_in!`,
//!   `Vec` on every allocator, `leak` and `into_slice`.
//! - [Memory and reset](memory_and_reset): what each `Allocator` call does to a block, chunk
//!   sizes, large blocks, what a reset keeps.
//! - [Scopes](scopes), [threads], [pools].
//! - [Validity, limits and statistics](limits_and_statistics).
//! - [Performance](performance).

#[doc = include_str!("../docs/guide/collections.md")]
pub mod collections {}

#[doc = "[threads]: crate::guide::threads"]
#[doc = include_str!("../docs/guide/memory-and-reset.md")]
pub mod memory_and_reset {}

#[doc = "[memory-and-reset]: crate::guide::memory_and_reset"]
#[doc = include_str!("../docs/guide/scopes.md")]
pub mod scopes {}

#[doc = "[memory-and-reset]: crate::guide::memory_and_reset"]
#[doc = include_str!("../docs/guide/threads.md")]
pub mod threads {}

#[doc = "[threads]: crate::guide::threads"]
#[doc = "[limits-and-statistics]: crate::guide::limits_and_statistics"]
#[doc = include_str!("../docs/guide/pools.md")]
pub mod pools {}

#[doc = include_str!("../docs/guide/limits-and-statistics.md")]
pub mod limits_and_statistics {}

#[doc = "[memory-and-reset#minimum-alignment]: crate::guide::memory_and_reset#minimum-alignment"]
#[doc = include_str!("../docs/guide/performance.md")]
pub mod performance {}
