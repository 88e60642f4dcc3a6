//! The compiled form of one fetch argument: a short program of Linux's
//! `fetch_insn`s (load, dereference*, store, modify, loop, end).

/// A register `%REG` can name on arm64 (Linux's `regoffset_table`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// `x0`..`x30`.
    X(u8),
    /// `sp`.
    Sp,
    /// `pc`.
    Pc,
    /// `pstate`.
    Pstate,
}

impl Reg {
    /// The register called `name` (without `%`), as Linux's
    /// `regs_query_register_offset` names them.
    pub fn from_name(name: &str) -> Option<Reg> {
        match name {
            "sp" => Some(Reg::Sp),
            "pc" => Some(Reg::Pc),
            "pstate" => Some(Reg::Pstate),
            _ => {
                let n = name.strip_prefix('x')?;
                // Linux compares names exactly: "x01" is not x1.
                if n.is_empty() || (n.len() > 1 && n.starts_with('0')) || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let v: u8 = n.parse().ok()?;
                (v <= 30).then_some(Reg::X(v))
            }
        }
    }
}

/// One operation (Linux's `enum fetch_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Nop,
    // Stage 1: load.
    Reg(Reg),
    Stack,
    StackP,
    Retval,
    Imm,
    Comm,
    Arg,
    Data,
    Edata,
    /// A field of the attached event's record (event probes): `param` is
    /// its offset, `size` its size, `basesize` its [`crate::StrKind`]
    /// code (0 for a number), `lshift` 1 if signed.
    TpArg,
    // Stage 2: dereference.
    Deref,
    UDeref,
    // Stage 3: store.
    StRaw,
    StMem,
    StUMem,
    StString,
    StUString,
    StSymstr,
    // Stage 4: modify.
    ModBf,
    // Stage 5: loop.
    LpArray,
    End,
    /// Holds an `@SYM` until it is resolved into the next `Imm`.
    NopSymbol,
}

/// One instruction. Linux packs the operands into a union; they are kept
/// apart here, which changes nothing observable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    pub op: Op,
    pub param: u32,
    pub offset: i32,
    pub size: u32,
    pub imm: u64,
    pub basesize: u8,
    pub lshift: u8,
    pub rshift: u8,
}

impl Insn {
    pub const NOP: Insn = Insn {
        op: Op::Nop,
        param: 0,
        offset: 0,
        size: 0,
        imm: 0,
        basesize: 0,
        lshift: 0,
        rshift: 0,
    };
}

/// Instructions per argument, the last one being the end (FETCH_INSN_MAX).
pub(crate) const FETCH_INSN_MAX: usize = 16;
