//! `#[kernel_test]`: marks a function as an in-kernel test. The function
//! stays as written; a descriptor (`kernel::ktest::KernelTest`) naming it is
//! placed in the `.kernel_tests` link section, which the test build's
//! harness walks at boot.
//!
//! `#[notrace]`: marks a function that must not be instrumented (see
//! `kernel::notrace`); its address goes into the `_notrace_symbols` link
//! section.

use proc_macro::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

/// Registers the annotated `fn name()` as an in-kernel test.
#[proc_macro_attribute]
pub fn kernel_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return compile_error("#[kernel_test] takes no arguments");
    }
    let Some(name) = fn_name(&item) else {
        return compile_error("#[kernel_test] must be placed on a function");
    };
    let static_name = Ident::new(
        &format!("__KERNEL_TEST_{}", name.to_string().to_uppercase()),
        Span::call_site(),
    );
    let registration: TokenStream = format!(
        "#[allow(unsafe_code)] // link_section: the registration mechanism itself
         #[used]
         #[link_section = \".kernel_tests\"]
         static {static_name}: crate::ktest::KernelTest = crate::ktest::KernelTest {{
             name: concat!(module_path!(), \"::\", \"{name}\"),
             func: {name},
         }};"
    )
    .parse()
    .expect("registration tokens");
    let mut out = item;
    out.extend(registration);
    out
}

/// Marks the annotated free function as notrace: kprobes refuse it, and it
/// is built without an ftrace patch site (the crate using it needs
/// `#![feature(patchable_function_entry)]`).
#[proc_macro_attribute]
pub fn notrace(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return compile_error("#[notrace] takes no arguments");
    }
    let Some(name) = fn_name(&item) else {
        return compile_error("#[notrace] must be placed on a function");
    };
    let mark: TokenStream = format!(
        "const _: () = {{
             #[allow(unsafe_code)] // link_section: the notrace mark itself
             #[used]
             #[link_section = \"_notrace_symbols\"]
             static ENTRY: crate::notrace::NotraceSymbol = crate::notrace::NotraceSymbol({name} as *const ());
         }};"
    )
    .parse()
    .expect("notrace mark tokens");
    let mut out: TokenStream = "#[patchable_function_entry(prefix_nops = 0, entry_nops = 0)]"
        .parse()
        .expect("patchable_function_entry tokens");
    out.extend(item);
    out.extend(mark);
    out
}

/// The name after `fn` in an item.
fn fn_name(item: &TokenStream) -> Option<Ident> {
    let tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    tokens.windows(2).find_map(|w| match (&w[0], &w[1]) {
        (TokenTree::Ident(kw), TokenTree::Ident(name)) if kw.to_string() == "fn" => Some(name.clone()),
        _ => None,
    })
}

fn compile_error(msg: &str) -> TokenStream {
    let mut ts = TokenStream::new();
    ts.extend([
        TokenTree::Ident(Ident::new("compile_error", Span::call_site())),
        TokenTree::Punct(Punct::new('!', Spacing::Alone)),
        TokenTree::Group(Group::new(
            Delimiter::Parenthesis,
            format!("{msg:?}").parse().expect("literal"),
        )),
        TokenTree::Punct(Punct::new(';', Spacing::Alone)),
    ]);
    ts
}
