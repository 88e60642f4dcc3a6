//! The vocabulary of the test programs (`usertests`, `kprobetests`,
//! `ptracetests`): a check is a named function returning an [`Outcome`];
//! [`ensure!`](crate::ensure), [`check_eq!`](crate::check_eq) and
//! [`Context::ctx`] turn a wrong result into a [`Fail`] that says what was
//! wrong, and [`checks!`](crate::checks) lists checks under their names.

use crate::Errno;
use alloc::format;
use alloc::string::String;

/// Why a check failed, for the report line.
pub struct Fail(pub String);

/// What a check returns.
pub type Outcome = Result<(), Fail>;

impl From<Errno> for Fail {
    fn from(e: Errno) -> Fail {
        Fail(format!("unexpected error {e:?}"))
    }
}

impl From<String> for Fail {
    fn from(s: String) -> Fail {
        Fail(s)
    }
}

/// Adds what was being done to an unexpected error: `open(...).ctx("open x")?`.
pub trait Context<T> {
    /// The error, prefixed with `what`.
    fn ctx(self, what: &str) -> Result<T, Fail>;
}

impl<T> Context<T> for Result<T, Errno> {
    fn ctx(self, what: &str) -> Result<T, Fail> {
        self.map_err(|e| Fail(format!("{what}: unexpected error {e:?}")))
    }
}

/// One check: a name saying what it proves, and its body.
pub struct Check {
    /// The function's name.
    pub name: &'static str,
    /// The check itself.
    pub run: fn() -> Outcome,
}

/// Fails the check unless `got == want`, naming what was compared.
#[macro_export]
macro_rules! check_eq {
    ($got:expr, $want:expr, $($what:tt)+) => {{
        let got = $got;
        let want = $want;
        if got != want {
            return Err($crate::check::Fail(alloc::format!(
                "{}: got {:?}, want {:?}",
                format_args!($($what)+),
                got,
                want
            )));
        }
    }};
}

/// Fails the check with the message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($what:tt)+) => {
        if !$cond {
            return Err($crate::check::Fail(alloc::format!($($what)+)));
        }
    };
}

/// A list of [`Check`]s named after their functions:
/// `checks![read_write_roundtrip, ...]`.
#[macro_export]
macro_rules! checks {
    ($($f:ident),* $(,)?) => {
        &[$($crate::check::Check { name: stringify!($f), run: $f }),*]
    };
}
