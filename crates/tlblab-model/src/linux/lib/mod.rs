//! Linux's `lib/`: copies between user memory and kernel buffers.

pub mod iov_iter;
