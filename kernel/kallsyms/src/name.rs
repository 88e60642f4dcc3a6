//! How a function's name is spelled in kallsyms: one token, without
//! whitespace, that Linux's parsers of symbol names take whole.
//!
//! Rust paths as the demangler prints them (`<kernel::fs::tty::Console as
//! vfs::file::FileOps>::read`) hold spaces, which break every tool that
//! reads `/proc/kallsyms` line by line, and `:`, which Linux's grammars
//! read as a separator: `kprobe_events` takes `[MOD:]SYM` by the first `:`
//! (`validate_probe_symbol()`), refuses a symbol holding both `/` and `:`
//! as a uprobe, and `set_ftrace_filter` cuts `func:command` at the first
//! `:`. `+` and `-` start a probe offset, `%` a `%return`, `#` a comment,
//! `*`, `?`, `[` and `!` are ftrace globs, `(` and `)` delimit a
//! dereference. So the kallsyms name keeps only `[A-Za-z0-9_]` plus `<`,
//! `>` and `,` for generic arguments (which no probe or filter grammar
//! gives a meaning) and `.` for the `.N` suffix of duplicates:
//!
//! | Rust                                        | kallsyms                          |
//! |---------------------------------------------|-----------------------------------|
//! | `kernel::sched::schedule`                   | `kernel__sched__schedule`         |
//! | `<kernel::fs::tty::Console as vfs::file::FileOps>::read` | `kernel__fs__tty__Console__FileOps__read` |
//! | `<alloc::raw_vec::RawVecInner>::finish_grow` | `alloc__raw_vec__RawVecInner__finish_grow` |
//! | `core::ptr::drop_glue::<vfs::mount::Path>`  | `core__ptr__drop_glue<vfs__mount__Path>` |
//! | `kernel::process::do_clone::{closure#1}`    | `kernel__process__do_clone__closure_1` |
//! | `<&str as core::fmt::Display>::fmt`         | `ref_str__Display__fmt`           |
//!
//! `::` becomes `__` rather than `.`, because a `.` in a Linux symbol marks
//! a compiler's clone of a function (`.isra.0`, `.constprop.0`, `.cold`)
//! and tools skip such names (ftracetest's `multiple_kprobes.tc` probes
//! only dot-free ones). An impl method is named by its self type, then the
//! trait's last segment: the path to the trait adds length, rarely
//! information. Types inside generic arguments are spelled in words
//! (`ref_T`, `refmut_T`, `ptr_T`, `slice<T>`, `array<T,N>`, `tuple<A,B>`,
//! `unit`, `fn<A>_ret_R`, `dyn_Trait`, `never`). Names that come out equal
//! (the same generic instance emitted by two crates, or two renderings that
//! meet) are told apart by [`make_unique`]: all of them get `.1`, `.2`, ...
//! in address order, and the bare name is not listed, so a probe on it is
//! refused as not unique, as Linux refuses `name_show`.

use alloc::string::String;
use alloc::vec::Vec;

/// Longest kallsyms name, as Linux's `KSYM_NAME_LEN` (512) with its NUL.
pub const KSYM_NAME_MAX: usize = 511;

/// Longest rendered name before a `.N` suffix: what [`render`] cuts a
/// longer one to, leaving room for the suffix within [`KSYM_NAME_MAX`].
pub const RENDERED_MAX: usize = KSYM_NAME_MAX - 11;

/// Whether `c` may appear in a kallsyms name.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '<' | '>' | ',' | '.')
}

/// Whether `name` is a well-formed kallsyms name: not empty, only
/// [`is_name_char`] characters.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_name_char)
}

/// The kallsyms spelling of a demangled name (`{:#}` form, without the
/// hash), at most [`RENDERED_MAX`] bytes. Names that are already tokens
/// (`vfs_read`, `__arm64_sys_read`) come back unchanged. Never panics; whatever the input, the result
/// satisfies [`is_valid_name`].
pub fn render(demangled: &str) -> String {
    let mut out = String::with_capacity(demangled.len());
    match qualified_root(demangled) {
        Some((self_ty, trait_path, rest)) => {
            flatten(self_ty, &mut out);
            if let Some(tr) = trait_path {
                out.push_str("__");
                flatten(last_segment(tr), &mut out);
            }
            if !rest.is_empty() {
                out.push_str("__");
                flatten(rest, &mut out);
            }
        }
        None => flatten(demangled, &mut out),
    }
    if out.is_empty() {
        out.push('_');
    }
    // All ASCII: any byte index is a character boundary. Deeply generic
    // names run past Linux's limit; cut ones that meet get `.N`.
    out.truncate(RENDERED_MAX);
    out
}

/// Splits `<T>::rest` or `<T as Trait>::rest` into `(T, Some(Trait), rest)`.
fn qualified_root(s: &str) -> Option<(&str, Option<&str>, &str)> {
    if !s.starts_with('<') {
        return None;
    }
    let close = matching_angle(s, 0)?;
    let inner = s.get(1..close)?;
    let rest = s.get(close + 1..)?;
    let rest = if rest.is_empty() {
        rest
    } else {
        rest.strip_prefix("::")?
    };
    match find_top_level(inner, " as ") {
        Some(at) => Some((&inner[..at], Some(&inner[at + 4..]), rest)),
        None => Some((inner, None, rest)),
    }
}

/// Index of the `>` closing the `<` at `open`, skipping the `>` of `->`.
fn matching_angle(s: &str, open: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Byte index of `pat` in `s` outside any `<>`, `()`, `[]` or `{}`.
fn find_top_level(s: &str, pat: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for i in 0..b.len() {
        match b[i] {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' | b')' | b']' | b'}' => depth -= 1,
            _ if depth == 0 && b[i..].starts_with(pat.as_bytes()) => return Some(i),
            _ => {}
        }
    }
    None
}

/// The last `::` segment of a path, with its generic arguments.
fn last_segment(path: &str) -> &str {
    let b = path.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' | b')' | b']' | b'}' => depth -= 1,
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    path.get(start..).unwrap_or(path)
}

/// Rewrites the demangler's notation into name characters, left to right.
fn flatten(s: &str, out: &mut String) {
    let mut i = 0;
    let b = s.as_bytes();
    let at = |i: usize, p: &str| b.get(i..).is_some_and(|r| r.starts_with(p.as_bytes()));
    while i < b.len() {
        let c = b[i];
        // Multi-character forms first.
        const WORDS: &[(&str, &str)] = &[
            ("::<", "<"),
            ("::", "__"),
            (" as ", "_as_"),
            (" -> ", "_ret_"),
            (" + ", "_"),
            (", ", ","),
            ("; ", ","),
            ("&mut ", "refmut_"),
            ("*const ", "ptr_"),
            ("*mut ", "ptrmut_"),
            ("dyn ", "dyn_"),
            ("unsafe ", "unsafe_"),
            ("()", "unit"),
            ("fn(", "fn<"),
        ];
        if let Some((from, to)) = WORDS.iter().find(|(from, _)| at(i, from)) {
            out.push_str(to);
            i += from.len();
            continue;
        }
        if at(i, "for<") {
            // Higher-ranked lifetimes (`for<'a> fn(&'a T)`) say nothing a
            // name needs.
            i = matching_angle(s, i + 3).map_or(b.len(), |e| e + 1);
            if at(i, " ") {
                i += 1;
            }
            continue;
        }
        match c {
            b'\'' => {
                // A char constant `'x'` keeps its character if it can;
                // a lifetime (`'a`, `'_`, `'static`) goes, with the
                // separator after it.
                if b.get(i + 2) == Some(&b'\'') {
                    let ch = b[i + 1] as char;
                    out.push(if ch.is_ascii_alphanumeric() { ch } else { '_' });
                    i += 3;
                    continue;
                }
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if at(i, ", ") {
                    i += 2;
                } else if at(i, " ") || at(i, ",") {
                    i += 1;
                }
                continue;
            }
            // `extern "C" fn`: the ABI as a word.
            b'"' => {}
            b'&' => out.push_str("ref_"),
            b'(' => out.push_str("tuple<"),
            b'[' => out.push_str(if array_bracket(s, i) { "array<" } else { "slice<" }),
            b')' | b']' => close(out),
            b'>' => close(out),
            b'<' => out.push('<'),
            b',' | b';' => out.push(','),
            b'!' => out.push_str("never"),
            b'-' => out.push_str("neg"),
            b'{' | b'}' => {}
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' => out.push(c as char),
            // Spaces, `#`, a lone `:`, `$`, non-ASCII, anything else.
            _ => {
                if !out.ends_with('_') || out.is_empty() {
                    out.push('_');
                }
                // Skip the rest of a multi-byte character.
                while i + 1 < b.len() && (b[i + 1] & 0xc0) == 0x80 {
                    i += 1;
                }
            }
        }
        i += 1;
    }
}

/// Closes a generic list, dropping the trailing comma of `(A,)`.
fn close(out: &mut String) {
    if out.ends_with(',') {
        out.pop();
    }
    out.push('>');
}

/// Whether the `[` at `open` starts an array type `[T; N]` rather than a
/// slice `[T]`.
fn array_bracket(s: &str, open: usize) -> bool {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'[' | b'<' | b'(' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b']' | b'>' | b')' => {
                depth -= 1;
                if depth == 0 {
                    return false;
                }
            }
            b';' if depth == 1 => return true,
            _ => {}
        }
    }
    false
}

/// Makes every name in `names` unique: a name held by several entries
/// becomes `name.1`, `name.2`, ... in the order given (address order in
/// the kernel's table), skipping suffixes that some other name already
/// has. Names held once are left alone.
pub fn make_unique(names: &mut [String]) {
    use alloc::collections::{BTreeMap, BTreeSet};
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for n in names.iter() {
        *count.entry(n.clone()).or_default() += 1;
    }
    let mut taken: BTreeSet<String> = count.keys().cloned().collect();
    let mut next: BTreeMap<String, usize> = BTreeMap::new();
    for n in names.iter_mut() {
        if count.get(n.as_str()).copied().unwrap_or(0) < 2 {
            continue;
        }
        let k = next.entry(n.clone()).or_insert(1);
        let renamed = loop {
            let candidate = alloc::format!("{n}.{k}");
            *k += 1;
            if !taken.contains(&candidate) {
                break candidate;
            }
        };
        taken.insert(renamed.clone());
        *n = renamed;
    }
}

/// The kallsyms names of `demangled` names listed in address order:
/// [`render`] each, then [`make_unique`].
pub fn render_all<S: AsRef<str>>(demangled: &[S]) -> Vec<String> {
    let mut names: Vec<String> = demangled.iter().map(|d| render(d.as_ref())).collect();
    make_unique(&mut names);
    names
}
