//! The flattened device tree format (Devicetree Specification v0.4,
//! chapter 5): header, memory reservation block, structure block tokens
//! and a depth-first walk that hands each node its chain of ancestors.
//!
//! Every read is bounds-checked: malformed input becomes an [`Error`], never
//! a panic.

use core::ops::ControlFlow;

use crate::Error;

/// `magic` of every FDT header.
pub(crate) const FDT_MAGIC: u32 = 0xd00d_feed;
/// Size of the version 17 header, the one dtc and every firmware emit.
pub(crate) const HEADER_SIZE: usize = 40;
/// Documentation/arch/arm64/booting.rst: "The device tree blob (dtb) ...
/// must not exceed 2 megabytes in size". Refusing more keeps a garbage
/// `totalsize` from making the kernel map gigabytes.
pub(crate) const MAX_TOTAL_SIZE: usize = 2 << 20;
/// Nodes nested deeper than this are refused; real trees stay under 8.
pub(crate) const MAX_DEPTH: usize = 16;

const FDT_BEGIN_NODE: u32 = 1;
const FDT_END_NODE: u32 = 2;
const FDT_PROP: u32 = 3;
const FDT_NOP: u32 = 4;
const FDT_END: u32 = 9;

/// Big-endian u32 at `at`, if the bytes are there.
pub(crate) fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    // A slice pattern rather than try_into: this is the hottest function,
    // and it stays cheap in unoptimised (test) builds too.
    match bytes.get(at..)? {
        [a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// Big-endian u64 at `at`, if the bytes are there.
fn be64(bytes: &[u8], at: usize) -> Option<u64> {
    let high = be32(bytes, at)?;
    let low = be32(bytes, at.checked_add(4)?)?;
    Some(u64::from(high) << 32 | u64::from(low))
}

/// The bytes before the first NUL, if there is one.
fn until_nul(bytes: &[u8]) -> Option<&[u8]> {
    // CStr's search is core's optimised memchr.
    core::ffi::CStr::from_bytes_until_nul(bytes).ok().map(|s| s.to_bytes())
}

/// `x` rounded up to a multiple of 4 (tokens are 32-bit aligned).
fn align4(x: usize) -> Option<usize> {
    Some(x.checked_add(3)? & !3)
}

/// Checks the magic and returns `totalsize`.
pub(crate) fn read_total_size(header: &[u8]) -> Result<usize, Error> {
    let (Some(magic), Some(total)) = (be32(header, 0), be32(header, 4)) else {
        return Err(Error::TooShort { len: header.len() });
    };
    if magic != FDT_MAGIC {
        return Err(Error::BadMagic { found: magic });
    }
    let total = total as usize;
    if total < HEADER_SIZE {
        return Err(Error::BadTotalSize { total_size: total });
    }
    if total > MAX_TOTAL_SIZE {
        return Err(Error::TooLarge { total_size: total });
    }
    Ok(total)
}

/// A validated FDT: its blocks located and known to lie inside `totalsize`.
pub(crate) struct Fdt<'a> {
    /// `totalsize` from the header.
    pub total_size: usize,
    /// `boot_cpuid_phys` from the header.
    pub boot_cpuid: u32,
    /// From the memory reservation block's offset to the end of the blob;
    /// the block has no size field, only a terminating entry.
    rsvmap: &'a [u8],
    off_rsvmap: usize,
    structure: &'a [u8],
    off_struct: usize,
    strings: &'a [u8],
}

impl<'a> Fdt<'a> {
    /// Reads and checks the header, and slices out the blocks.
    pub fn new(dtb: &'a [u8]) -> Result<Self, Error> {
        if dtb.len() < HEADER_SIZE {
            // A short buffer with a good magic is a truncated blob.
            return Err(match read_total_size(dtb) {
                Err(e @ Error::BadMagic { .. }) => e,
                _ => Error::TooShort { len: dtb.len() },
            });
        }
        let total_size = read_total_size(dtb)?;
        let blob = dtb.get(..total_size).ok_or(Error::Truncated {
            total_size,
            available: dtb.len(),
        })?;
        let field = |index: usize| be32(blob, index.saturating_mul(4)).unwrap_or(0) as usize;
        let (off_struct, off_strings, off_rsvmap) = (field(2), field(3), field(4));
        let (version, last_comp_version) = (field(5) as u32, field(6) as u32);
        let boot_cpuid = field(7) as u32;
        // Version 16 is the oldest with the layout read here (inline node
        // names); 17 added size_dt_struct. Both remain readable by a reader
        // of version 17.
        if version < 16 || last_comp_version > 17 {
            return Err(Error::UnsupportedVersion {
                version,
                last_comp_version,
            });
        }
        let size_strings = field(8);
        let size_struct = if version >= 17 {
            field(9)
        } else {
            total_size.saturating_sub(off_struct)
        };
        let block = |name: &'static str, offset: usize, size: usize| {
            offset
                .checked_add(size)
                .and_then(|end| blob.get(offset..end))
                .ok_or(Error::BlockOutOfBounds {
                    block: name,
                    offset,
                    size,
                    total_size,
                })
        };
        let structure = block("structure", off_struct, size_struct)?;
        let strings = block("strings", off_strings, size_strings)?;
        let rsvmap = block("memory reservation", off_rsvmap, total_size.saturating_sub(off_rsvmap))?;
        Ok(Self {
            total_size,
            boot_cpuid,
            rsvmap,
            off_rsvmap,
            structure,
            off_struct,
            strings,
        })
    }

    /// Calls `each(address, size)` for every memory reservation block entry
    /// up to the terminating all-zero one.
    pub fn for_each_memreserve(&self, mut each: impl FnMut(u64, u64)) -> Result<(), Error> {
        let mut at = 0usize;
        loop {
            let (Some(address), Some(size)) = (
                be64(self.rsvmap, at),
                at.checked_add(8).and_then(|a| be64(self.rsvmap, a)),
            ) else {
                return Err(Error::Malformed {
                    offset: self.off_rsvmap.saturating_add(at),
                    what: "memory reservation block has no terminating entry",
                });
            };
            if address == 0 && size == 0 {
                return Ok(());
            }
            each(address, size);
            at = at.saturating_add(16);
        }
    }

    fn malformed(&self, pos: usize, what: &'static str) -> Error {
        Error::Malformed {
            offset: self.off_struct.saturating_add(pos),
            what,
        }
    }

    /// The token at structure-block offset `pos` (NOPs skipped) and the
    /// offset just after it.
    fn token(&self, mut pos: usize) -> Result<(Token<'a>, usize), Error> {
        loop {
            let tag =
                be32(self.structure, pos).ok_or_else(|| self.malformed(pos, "structure block ends inside a node"))?;
            let body = pos.saturating_add(4);
            match tag {
                FDT_NOP => pos = body,
                FDT_BEGIN_NODE => {
                    let rest = self.structure.get(body..).unwrap_or(&[]);
                    let name = until_nul(rest).ok_or_else(|| self.malformed(pos, "node name is not terminated"))?;
                    let next = body
                        .checked_add(name.len())
                        .and_then(|e| align4(e.checked_add(1)?))
                        .ok_or_else(|| self.malformed(pos, "node name is too long"))?;
                    return Ok((Token::BeginNode { name }, next));
                }
                FDT_PROP => {
                    let header = |i: usize| be32(self.structure, body.saturating_add(i));
                    let (Some(len), Some(name_off)) = (header(0), header(4)) else {
                        return Err(self.malformed(pos, "structure block ends inside a property"));
                    };
                    let start = body.saturating_add(8);
                    let value = start
                        .checked_add(len as usize)
                        .and_then(|end| self.structure.get(start..end))
                        .ok_or_else(|| self.malformed(pos, "property value runs past the structure block"))?;
                    let name = self
                        .string(name_off as usize)
                        .ok_or_else(|| self.malformed(pos, "bad property name offset"))?;
                    let next = align4(start.saturating_add(value.len()))
                        .ok_or_else(|| self.malformed(pos, "property is too long"))?;
                    return Ok((Token::Prop { name, value }, next));
                }
                FDT_END_NODE => return Ok((Token::EndNode, body)),
                FDT_END => return Ok((Token::End, body)),
                _ => return Err(self.malformed(pos, "unknown structure block token")),
            }
        }
    }

    /// The NUL-terminated string at `offset` in the strings block.
    fn string(&self, offset: usize) -> Option<&'a [u8]> {
        until_nul(self.strings.get(offset..)?)
    }

    /// The properties of `node`, as (name, value).
    pub fn props(&self, node: &Node<'a>) -> Props<'_, 'a> {
        Props {
            fdt: self,
            pos: Some(node.props),
        }
    }

    /// The value of `node`'s property `name`.
    pub fn prop(&self, node: &Node<'a>, name: &str) -> Option<&'a [u8]> {
        self.props(node).find(|&(n, _)| n == name.as_bytes()).map(|(_, v)| v)
    }

    /// Visits every node depth-first, in blob order, with the path from
    /// the root to it (`path.last()` is the node), until `visit` breaks.
    ///
    /// The whole structure block is checked on the way, so a walk that is
    /// not stopped early proves the block well formed.
    pub fn walk(&self, mut visit: impl FnMut(&[Node<'a>]) -> ControlFlow<()>) -> Result<(), Error> {
        let mut stack = [Node::default(); MAX_DEPTH];
        let mut depth = 0usize;
        let mut pos = 0usize;
        loop {
            let (token, next) = self.token(pos)?;
            match token {
                Token::BeginNode { name } => {
                    let parent = depth.checked_sub(1).and_then(|i| stack.get(i));
                    let (node, after_props) = self.scan_node(name, next, parent)?;
                    let slot = stack.get_mut(depth).ok_or(Error::TooDeep { max: MAX_DEPTH })?;
                    *slot = node;
                    depth = depth.saturating_add(1);
                    if visit(stack.get(..depth).unwrap_or(&[])).is_break() {
                        return Ok(());
                    }
                    pos = after_props;
                }
                Token::EndNode => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| self.malformed(pos, "end of a node that was not begun"))?;
                    if depth == 0 {
                        // The root is closed: nothing after it is a node.
                        return Ok(());
                    }
                    pos = next;
                }
                Token::Prop { .. } => {
                    return Err(self.malformed(
                        pos,
                        if depth == 0 {
                            "property outside the root node"
                        } else {
                            "property after a child node"
                        },
                    ));
                }
                Token::End => {
                    return Err(self.malformed(
                        pos,
                        if depth == 0 {
                            "no root node"
                        } else {
                            "structure block ends inside a node"
                        },
                    ));
                }
            }
        }
    }

    /// Reads the properties of the node whose name ends before `pos`, and
    /// returns the node and the offset of whatever follows its properties.
    fn scan_node(&self, name: &'a [u8], pos: usize, parent: Option<&Node<'a>>) -> Result<(Node<'a>, usize), Error> {
        // The Devicetree Specification (2.3.5) says a node without
        // #address-cells/#size-cells gets 2 and 1; like Linux's
        // of_n_addr_cells(), nested nodes inherit their parent's instead.
        let mut node = Node {
            name,
            props: pos,
            address_cells: parent.map_or(2, |p| p.address_cells),
            size_cells: parent.map_or(1, |p| p.size_cells),
            ranges: None,
            compatible: &[],
            device_type: &[],
            reg: None,
            phandle: None,
            interrupt_parent: parent.and_then(|p| p.interrupt_parent),
            available: parent.is_none_or(|p| p.available),
        };
        let mut at = pos;
        loop {
            let (token, next) = self.token(at)?;
            let Token::Prop { name, value } = token else {
                return Ok((node, at));
            };
            let cell = || be32(value, 0).filter(|_| value.len() == 4);
            match name {
                b"#address-cells" => node.address_cells = cell().unwrap_or(node.address_cells),
                b"#size-cells" => node.size_cells = cell().unwrap_or(node.size_cells),
                b"ranges" => node.ranges = Some(value),
                b"compatible" => node.compatible = value,
                b"device_type" => node.device_type = value,
                b"reg" => node.reg = Some(value),
                b"phandle" | b"linux,phandle" => node.phandle = cell(),
                b"interrupt-parent" => node.interrupt_parent = cell(),
                b"status" => node.available &= status_okay(value),
                _ => {}
            }
            at = next;
        }
    }
}

/// `status` values that mean "usable" (Linux's __of_device_is_available()).
fn status_okay(value: &[u8]) -> bool {
    matches!(crate::prop_str(value), Some("okay" | "ok"))
}

enum Token<'a> {
    BeginNode { name: &'a [u8] },
    Prop { name: &'a [u8], value: &'a [u8] },
    EndNode,
    End,
}

/// A node as met by [`Fdt::walk`], with what it inherits from its
/// ancestors already resolved.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Node<'a> {
    /// Name with unit address (`serial@7e201000`); empty for the root.
    pub name: &'a [u8],
    /// Structure-block offset of the node's first property.
    props: usize,
    /// `#address-cells` for this node's children (own or inherited).
    pub address_cells: u32,
    /// `#size-cells` for this node's children (own or inherited).
    pub size_cells: u32,
    /// `ranges`: `None` if absent (children not translatable), empty for
    /// an identity mapping.
    pub ranges: Option<&'a [u8]>,
    /// `compatible`, kept because almost every lookup tests it.
    pub compatible: &'a [u8],
    /// `device_type`.
    pub device_type: &'a [u8],
    /// `reg`.
    pub reg: Option<&'a [u8]>,
    /// `phandle`, if any.
    pub phandle: Option<u32>,
    /// `interrupt-parent`, own or inherited.
    pub interrupt_parent: Option<u32>,
    /// Status okay, and so are all ancestors' (Linux does not populate
    /// devices below a disabled bus).
    pub available: bool,
}

/// Iterator over a node's properties.
pub(crate) struct Props<'f, 'a> {
    fdt: &'f Fdt<'a>,
    pos: Option<usize>,
}

impl<'a> Iterator for Props<'_, 'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        // The walk has already checked these bytes; should they be bad all
        // the same, the iteration just ends.
        match self.fdt.token(self.pos?) {
            Ok((Token::Prop { name, value }, next)) => {
                self.pos = Some(next);
                Some((name, value))
            }
            _ => {
                self.pos = None;
                None
            }
        }
    }
}
