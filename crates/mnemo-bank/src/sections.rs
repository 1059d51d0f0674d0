//! Section-preserving edits of hand-written markdown: the pure functions
//! live in [`mnemo_compress::sections`] (the gate plan uses them); this
//! module keeps their old path.

pub use mnemo_compress::sections::*;
