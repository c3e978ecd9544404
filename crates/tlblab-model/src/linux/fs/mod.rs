//! File systems (Linux's `fs/`): pipes, file creation (`namei.c`, dentries, `struct file`, ext4).

pub mod dcache;
pub mod ext4;
pub mod file_table;
pub mod namei;
pub mod pipe;
