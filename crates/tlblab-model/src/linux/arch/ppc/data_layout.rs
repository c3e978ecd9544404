//! Kernel and user data layouts as data (`layouts/*-data.toml`), beside the text layouts of
//! linux/arch/ppc/system_map.rs: the objects a workload's paths touch (kernel stack, `task_struct`,
//! `file`, inode, `mem_map` entries, buffer heads, the page-cache page, the RAM disk's page, the
//! user buffer), each with an address, a size and the basis of both, and per text function the
//! loads, stores, `dcbz`s and copies it makes on them. What the D-TLB and the D-cache see comes
//! from these; no function's data is a Rust constant.
//!
//! An object that is a new page per page written (the page-cache page, its `struct page`, its
//! buffer heads) or per page written back (the RAM disk's page) has a `stride` and advances with
//! that count (`index`), wrapping after `span` bytes (frames are reused).

use serde::Deserialize;
use std::collections::BTreeMap;

use super::system_map::{TextLayout, KERNEL_SPACE};

pub const DATA_LAYOUT_SCHEMA: u32 = 1;

/// Which count an object's address advances with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    None,
    /// Pages dirtied by the writer so far.
    Written,
    /// Pages written back so far.
    WrittenBack,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObject {
    name: String,
    addr: u64,
    size: u64,
    #[serde(default)]
    stride: u64,
    #[serde(default)]
    span: u64,
    /// The object moves on every `per` counts (default 1): an ext2 indirect block every 256
    /// blocks, a radix-tree leaf every 64 pages.
    #[serde(default)]
    per: Option<u64>,
    /// `none` (default), `written`, `written-back`.
    #[serde(default)]
    index: Option<String>,
    basis: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccess {
    function: String,
    object: String,
    #[serde(default)]
    offset: u64,
    bytes: u64,
    /// `load`, `store`, `zero` (dcbz per line), `copy` (from `from`).
    op: String,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    from_offset: u64,
    #[serde(default)]
    basis: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDataLayout {
    schema_version: u32,
    name: String,
    kernel: String,
    description: String,
    #[serde(rename = "object", default)]
    objects: Vec<RawObject>,
    #[serde(rename = "access", default)]
    accesses: Vec<RawAccess>,
}

/// One data object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataObject {
    pub name: String,
    pub addr: u64,
    pub size: u64,
    pub stride: u64,
    pub span: u64,
    /// Counts per move (>= 1).
    pub per: u64,
    pub index: Index,
    pub basis: String,
}

impl DataObject {
    pub fn is_kernel(&self) -> bool {
        self.addr >= KERNEL_SPACE
    }

    /// Its address when the count it follows is `n`.
    pub fn address(&self, n: u64) -> u64 {
        if self.stride == 0 {
            return self.addr;
        }
        let slots = (self.span / self.stride).max(1);
        self.addr + self.stride * ((n / self.per) % slots)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataOp {
    Load,
    Store,
    Zero,
    /// A copy into the access's object from object `from`.
    Copy {
        from: usize,
    },
}

/// One access: `bytes` from `offset` into object `object`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataAccess {
    pub object: usize,
    pub offset: u64,
    pub bytes: u64,
    pub op: DataOp,
    pub from_offset: u64,
}

/// A validated data layout.
#[derive(Debug, Clone)]
pub struct DataLayout {
    pub name: String,
    pub kernel: String,
    pub description: String,
    objects: Vec<DataObject>,
    by_function: BTreeMap<String, Vec<DataAccess>>,
}

impl DataLayout {
    /// Parse and validate `text` against the text layout whose functions it names; `file` names
    /// the source in errors (one line: file, key, allowed values).
    pub fn parse(file: &str, text: &str, functions: &TextLayout) -> Result<DataLayout, String> {
        Self::parse_raw(file, text, functions).map_err(crate::toml_error::one_line)
    }

    fn parse_raw(file: &str, text: &str, functions: &TextLayout) -> Result<DataLayout, String> {
        let raw: RawDataLayout = toml::from_str(text).map_err(|e| {
            format!("{file}: {}", e.to_string().split_whitespace().collect::<Vec<_>>().join(" "))
        })?;
        let err = |m: String| Err(format!("{file}: {m}"));
        if raw.schema_version != DATA_LAYOUT_SCHEMA {
            return err(format!(
                "schema_version = {}: this build reads {DATA_LAYOUT_SCHEMA}",
                raw.schema_version
            ));
        }
        let mut objects = Vec::new();
        for (i, o) in raw.objects.iter().enumerate() {
            let key = format!("object[{i}] ({})", o.name);
            let index = match o.index.as_deref() {
                None | Some("none") => Index::None,
                Some("written") => Index::Written,
                Some("written-back") => Index::WrittenBack,
                Some(v) => {
                    return err(format!(
                        "{key}.index = {v:?}: allowed values are [\"none\", \"written\", \"written-back\"]"
                    ))
                }
            };
            if o.size == 0 || o.addr % 4 != 0 || o.addr + o.size > 1 << 32 {
                return err(format!(
                    "{key}: addr {:#x} must be word aligned, size > 0, inside 32 bits",
                    o.addr
                ));
            }
            if (o.stride == 0) != (index == Index::None) || (o.stride > 0 && o.span < o.stride) {
                return err(format!(
                    "{key}: an object with index \"written\"/\"written-back\" needs stride > 0 and span >= stride; others neither"
                ));
            }
            let per = o.per.unwrap_or(1);
            if per == 0 || (o.per.is_some() && index == Index::None) {
                return err(format!(
                    "{key}.per = {per}: must be >= 1, and only on an object with index \"written\"/\"written-back\""
                ));
            }
            if o.basis.trim().is_empty() {
                return err(format!("{key}.basis: say where the address and size come from"));
            }
            if objects.iter().any(|x: &DataObject| x.name == o.name) {
                return err(format!("{key}.name: defined twice"));
            }
            objects.push(DataObject {
                name: o.name.clone(),
                addr: o.addr,
                size: o.size,
                stride: o.stride,
                span: o.span,
                per,
                index,
                basis: o.basis.clone(),
            });
        }
        let find = |name: &str| objects.iter().position(|o| o.name == name);
        let names = || objects.iter().map(|o| o.name.as_str()).collect::<Vec<_>>().join(", ");
        let mut by_function: BTreeMap<String, Vec<DataAccess>> = BTreeMap::new();
        for (i, a) in raw.accesses.iter().enumerate() {
            let key = format!("access[{i}] ({} -> {})", a.function, a.object);
            if functions.function(&a.function).is_none() {
                return err(format!(
                    "{key}.function: {:?} is not a function of layout {}",
                    a.function, functions.name
                ));
            }
            let Some(object) = find(&a.object) else {
                return err(format!("{key}.object: {:?} is not an object; objects: {}", a.object, names()));
            };
            let op = match (a.op.as_str(), &a.from) {
                ("load", None) => DataOp::Load,
                ("store", None) => DataOp::Store,
                ("zero", None) => DataOp::Zero,
                ("copy", Some(f)) => match find(f) {
                    Some(from) => DataOp::Copy { from },
                    None => return err(format!("{key}.from: {f:?} is not an object; objects: {}", names())),
                },
                _ => {
                    return err(format!(
                        "{key}.op = {:?}: allowed values are [\"load\", \"store\", \"zero\", \"copy\"] (`from` with copy only)",
                        a.op
                    ))
                }
            };
            let o = &objects[object];
            let within = |off: u64, obj: &DataObject| a.bytes > 0 && off + a.bytes <= obj.size;
            let src_ok = match op {
                DataOp::Copy { from } => within(a.from_offset, &objects[from]),
                _ => true,
            };
            if !within(a.offset, o) || !src_ok || a.offset % 4 != 0 || a.bytes % 4 != 0 {
                return err(format!(
                    "{key}: offset {:#x} + bytes {:#x} must be word multiples inside the object(s)",
                    a.offset, a.bytes
                ));
            }
            let _ = &a.basis;
            by_function.entry(a.function.clone()).or_default().push(DataAccess {
                object,
                offset: a.offset,
                bytes: a.bytes,
                op,
                from_offset: a.from_offset,
            });
        }
        Ok(DataLayout {
            name: raw.name,
            kernel: raw.kernel,
            description: raw.description,
            objects,
            by_function,
        })
    }

    pub fn objects(&self) -> &[DataObject] {
        &self.objects
    }

    /// The functions that have accesses.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.by_function.keys().map(String::as_str)
    }

    /// The accesses of `function`, in file order.
    pub fn accesses(&self, function: &str) -> &[DataAccess] {
        self.by_function.get(function).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests;
