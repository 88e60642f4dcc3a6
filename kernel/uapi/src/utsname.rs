//! `struct new_utsname` (include/uapi/linux/utsname.h), what `uname(2)`
//! fills in.

/// Length of each field, NUL included.
pub const NEW_UTS_LEN: usize = 65;

/// `struct new_utsname`: six NUL-padded strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewUtsname<'a> {
    /// `sysname` ("Linux").
    pub sysname: &'a str,
    /// `nodename`, the host name.
    pub nodename: &'a str,
    /// `release`, the kernel release.
    pub release: &'a str,
    /// `version`, the build description.
    pub version: &'a str,
    /// `machine` ("aarch64").
    pub machine: &'a str,
    /// `domainname`.
    pub domainname: &'a str,
}

/// Size of `struct new_utsname` in user memory.
pub const NEW_UTSNAME_SIZE: usize = NEW_UTS_LEN * 6;

impl NewUtsname<'_> {
    /// The bytes a user program sees: each field cut to 64 bytes so that a
    /// NUL always ends it, as the kernel's own strings always are.
    pub fn to_bytes(&self) -> [u8; NEW_UTSNAME_SIZE] {
        let mut b = [0u8; NEW_UTSNAME_SIZE];
        let fields = [
            self.sysname,
            self.nodename,
            self.release,
            self.version,
            self.machine,
            self.domainname,
        ];
        for (i, f) in fields.iter().enumerate() {
            let n = f.len().min(NEW_UTS_LEN - 1);
            b[i * NEW_UTS_LEN..i * NEW_UTS_LEN + n].copy_from_slice(&f.as_bytes()[..n]);
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utsname_fields_sit_at_65_byte_strides_and_end_in_nul() {
        let long = "x".repeat(100);
        let u = NewUtsname {
            sysname: "Linux",
            machine: "aarch64",
            domainname: &long,
            ..Default::default()
        };
        let b = u.to_bytes();
        assert_eq!(&b[..6], b"Linux\0");
        assert_eq!(&b[4 * 65..4 * 65 + 8], b"aarch64\0");
        assert_eq!(b[5 * 65 + 63], b'x');
        assert_eq!(b[5 * 65 + 64], 0);
    }
}
