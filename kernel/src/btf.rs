//! The kernel's function prototypes (Linux's BTF role), embedded by the
//! build's second link from the kernel's own DWARF (tools/kbuild/src/btf.rs):
//! the names and types of the parameters that arrive in `x0..x7`, so that
//! `$argN`, `$arg*`, `<argname>`, `->field` and a typed `$retval` work in
//! `kprobe_events`.
//!
//! The table is parsed on first use; each function's prototype is built
//! the first time it is asked for and kept for the kernel's lifetime, its
//! structures shared with every other prototype that reaches them.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;

pub use btf::FuncProto;
use btf::{Btf, StructCache};

struct State {
    btf: Btf<'static>,
    cache: StructCache,
    protos: BTreeMap<String, &'static FuncProto>,
}

static STATE: spin::Once<spin::Mutex<State>> = spin::Once::new();

fn state() -> &'static spin::Mutex<State> {
    STATE.call_once(|| {
        // A missing or malformed table (the first link has none) means no
        // function has a prototype, as on a Linux built without BTF.
        let btf = Btf::parse(arch::sections::btf_blob()).unwrap_or_else(|e| {
            if !arch::sections::btf_blob().is_empty() {
                crate::pr_warn!("btf: embedded table ignored: {e}");
            }
            Btf::empty()
        });
        spin::Mutex::new(State {
            btf,
            cache: StructCache::new(),
            protos: BTreeMap::new(),
        })
    })
}

/// The prototype of the kernel function `name` (its kallsyms name), if the
/// build could describe it (Linux: `btf_find_func_proto`).
pub fn func_proto(name: &str) -> Option<&'static FuncProto> {
    let mut st = state().lock();
    if let Some(&p) = st.protos.get(name) {
        return Some(p);
    }
    let State { btf, cache, protos } = &mut *st;
    let p = btf.func_proto(name, cache)?;
    // Kept for good: at most one per described function.
    let p: &'static FuncProto = Box::leak(Box::new(p));
    protos.insert(String::from(name), p);
    Some(p)
}

/// How many functions the embedded table describes.
pub fn nr_funcs() -> usize {
    state().lock().btf.len()
}

#[cfg(feature = "ktest")]
mod tests;
