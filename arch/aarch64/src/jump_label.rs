//! Static-key sites in the text (Linux's `arch/arm64/include/asm/jump_label.h`):
//! [`arch_static_branch!`] emits one instruction, `NOP` or `B label`, and
//! records it in `__jump_table` as a [`JumpEntry`]; the kernel's
//! `jump_label` module rewrites the sites through the text-patching path.

/// One `__jump_table` entry, as Linux's `struct jump_entry` with relative
/// references: each field holds the distance from its own address to what
/// it names, so the table needs no relocation and is position-independent.
#[repr(C)]
pub struct JumpEntry {
    code: i32,
    target: i32,
    key: i64,
}

/// Key flag: the entry was emitted by `static_branch_likely` (Linux's
/// `jump_entry_is_branch()`): the site jumps when the key is *off*.
pub const JUMP_ENTRY_BRANCH: usize = 1;
/// Key flag: the key starts enabled (a `StaticKey::new_true()` key), so
/// the build emitted the instruction for the enabled state.
pub const JUMP_ENTRY_DEFAULT_TRUE: usize = 2;
/// The flag bits of the key field; keys are at least 4-byte aligned.
pub const JUMP_ENTRY_FLAGS: usize = 3;

impl JumpEntry {
    /// The site's address.
    pub fn code(&self) -> usize {
        (core::ptr::addr_of!(self.code) as usize).wrapping_add_signed(self.code as isize)
    }

    /// Where the site's `B` goes.
    pub fn target(&self) -> usize {
        (core::ptr::addr_of!(self.target) as usize).wrapping_add_signed(self.target as isize)
    }

    /// The key's address, flags cleared.
    pub fn key(&self) -> usize {
        self.key_and_flags() & !JUMP_ENTRY_FLAGS
    }

    /// `JUMP_ENTRY_*` flags.
    pub fn flags(&self) -> usize {
        self.key_and_flags() & JUMP_ENTRY_FLAGS
    }

    fn key_and_flags(&self) -> usize {
        (core::ptr::addr_of!(self.key) as usize).wrapping_add_signed(self.key as isize)
    }
}

// SAFETY: the link script gathers every `__jump_table` entry, each a
// JumpEntry emitted by `arch_static_branch!` (or by hand-written assembly
// with the same layout), 8-byte aligned, between these symbols.
crate::linker_table!(
    /// Every static-key site of the image, in link order.
    pub fn jump_table() -> [JumpEntry] = __start___jump_table..__stop___jump_table
);

/// One static-key site: evaluates to `true` when the site jumps, `false`
/// when it falls through (Linux's `arch_static_branch` and
/// `arch_static_branch_jump` in one).
///
/// `$key` is the path of a `static` (at least 4-byte aligned) that the
/// table names; `default` (a constant `bool`) says whether it starts
/// enabled and `branch` (a constant `bool`) sets the entry's branch bit.
/// The build emits `B` when `default != branch`, `NOP` otherwise, as the
/// patching code expects of an untouched site. The jumping path is marked
/// cold: it is the unexpected one for both `static_branch_unlikely` (key
/// off is expected) and `static_branch_likely` (key on is expected).
///
/// The kernel's `static_branch_likely!`/`static_branch_unlikely!` are the
/// interface; this macro is their machine half.
#[macro_export]
macro_rules! arch_static_branch {
    ($key:path, default = $default:expr, branch = $branch:expr) => {
        'site: {
            #[allow(unsafe_code)]
            // SAFETY: the asm is one NOP or one B to a label of this
            // block, and a table entry in a data section; it touches no
            // register, memory or stack. Patching swaps the NOP and the B
            // only, both of which continue here or at the label.
            unsafe {
                core::arch::asm!(
                    "1:",
                    ".if {jmp}",
                    "b {yes}",
                    ".else",
                    "nop",
                    ".endif",
                    ".pushsection __jump_table, \"a\"",
                    ".balign 8",
                    ".long 1b - .",
                    ".long {yes} - .",
                    ".quad {key} + {flags} - .",
                    ".popsection",
                    key = sym $key,
                    flags = const (($branch) as usize) * $crate::jump_label::JUMP_ENTRY_BRANCH
                        + (($default) as usize) * $crate::jump_label::JUMP_ENTRY_DEFAULT_TRUE,
                    jmp = const (($default) != ($branch)) as u32,
                    yes = label {
                        core::hint::cold_path();
                        break 'site true;
                    },
                    options(nomem, nostack, preserves_flags)
                );
            }
            false
        }
    };
}
