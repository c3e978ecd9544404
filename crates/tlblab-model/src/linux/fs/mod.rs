//! File systems (Linux's `fs/`): pipes, file creation (`namei.c`, dentries, `struct file`, ext4).

pub mod dcache;
pub mod ext4;
pub mod file_table;
pub mod namei;
pub mod pipe;

/// The file systems' state.
pub struct Fs {
    /// The mounted ext4 and the VFS state file creation uses (namei.rs, ext4.rs), on a machine
    /// with SLUB and `[fs]`.
    pub(in crate::linux) mount: Option<namei::Mount>,
    /// Pipes (linux/fs/pipe.rs), by id.
    pub(in crate::linux) pipes: Vec<pipe::Pipe>,
}
