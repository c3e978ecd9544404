//! `kernel/locking`: the reader-writer semaphore behind `mmap_lock`.

pub mod rwsem;
